use super::*;

/// `read_record`'s verdict on `line`, and the text it appended.
fn read(line: &str) -> (Record, String) {
    let mut out = String::from("kept|");
    let record = read_record(line.as_bytes(), "text", &mut out);
    assert!(out.starts_with("kept|"), "what the buffer held is kept");
    (record, out["kept|".len()..].to_string())
}

#[test]
fn a_records_text_is_its_fields_string_unescaped() {
    assert_eq!(read(r#"{"text": "a\nb \"q\" \u00e9 \ud83d\ude00 \/"}"#), (Record::Text, "a\nb \"q\" é 😀 /".into()));
    assert_eq!(read(r#"  {"id": [1, {"x": null}], "text": "", "n": -1.5e300}  "#), (Record::Text, String::new()));
    assert_eq!(read("{\"text\": \"x\"}\r"), (Record::Text, "x".into()), "a CRLF line end is whitespace");
    assert_eq!(read(r#"{"te\u0078t": "escaped key"}"#), (Record::Text, "escaped key".into()));
    assert_eq!(read(r#"{"text": "first", "text": "last wins"}"#), (Record::Text, "last wins".into()));
    assert_eq!(read(r#"{"text": "\u0000 nul"}"#), (Record::Text, "\0 nul".into()));
}

#[test]
fn blank_lines_are_pythons_ascii_whitespace() {
    for line in ["", " ", "\t\r", "\x0b\x0c "] {
        assert_eq!(read(line), (Record::Blank, String::new()), "{line:?}");
    }
    assert_eq!(read("\u{a0}").0, Record::ForPython, "a no-break space is not ASCII whitespace");
}

#[test]
fn every_doubtful_line_goes_to_python() {
    let doubtful = [
        "not json",
        "[1, 2]",
        "\"text\"",
        "{}",
        r#"{"txt": "a"}"#,
        r#"{"text": 5}"#,
        r#"{"text": null}"#,
        r#"{"text": {"text": "inner"}}"#,
        r#"{"text": ["a"]}"#,
        r#"{"text": "a", "text": 5}"#,
        r#"{"text": 5, "text": "a"}"#,
        r#"{"text": "\ud83d"}"#,
        r#"{"text": "\ude00 trailing half"}"#,
        r#"{"text": "\ud83d\u0041"}"#,
        r#"{"text": "a", "n": NaN}"#,
        r#"{"other": "\ud83d lone: Python reads it", "text": "ok"}"#,
        r#"{"text": "a", "n": 1e400}"#,
        r#"{"text": "a", "n": Infinity}"#,
        r#"{"text": "a"} {"text": "b"}"#,
        r#"{"text": "a",}"#,
        "{\"text\": \"tab\tinside\"}",
        r#"{"text": "\x"}"#,
        r#"{"text": "a", "n": 01}"#,
        "\u{feff}{\"text\": \"bom\"}",
        "\x0c{\"text\": \"form feed is no JSON whitespace\"}",
    ];
    for line in doubtful {
        assert_eq!(read(line), (Record::ForPython, String::new()), "{line:?}");
    }
    let deep = |depth| format!(r#"{{"text": "a", "deep": {}{}}}"#, "[".repeat(depth), "]".repeat(depth));
    assert_eq!(read(&deep(100)).0, Record::Text);
    assert_eq!(read(&deep(200)).0, Record::ForPython, "deeper than serde_json goes: Python decides");
    assert_eq!(read(&deep(100_000)).0, Record::ForPython, "Python's RecursionError is Python's to raise");
    let mut out = String::new();
    assert_eq!(read_record(b"{\"text\": \"\xff\"}", "text", &mut out), Record::ForPython, "not UTF-8");
}

#[test]
fn long_digit_runs_go_to_python_whose_integers_have_a_digit_limit() {
    let digits = |count: usize| "7".repeat(count);
    assert_eq!(read(&format!(r#"{{"text": "a", "n": {}}}"#, digits(300))).0, Record::Text);
    assert_eq!(read(&format!(r#"{{"text": "{}"}}"#, digits(640))).0, Record::Text);
    assert_eq!(read(&format!(r#"{{"text": "a", "n": {}}}"#, digits(641))).0, Record::ForPython);
    assert_eq!(read(&format!(r#"{{"text": "{}"}}"#, digits(5000))).0, Record::ForPython);
    for (length, at) in [(641, 0), (641, 639), (641, 1), (1280, 5), (700, 1000)] {
        let bytes = format!("{}{}x", "a".repeat(at), digits(length));
        assert!(has_digit_run_over(bytes.as_bytes(), 640), "{length} at {at}");
        let short = format!("{}{}x{}", "a".repeat(at), digits(640), digits(640));
        assert!(!has_digit_run_over(short.as_bytes(), 640), "640 at {at}");
    }
}

#[test]
fn a_blocks_records_in_parts_keep_their_order_and_line_numbers() {
    let mut lines = Vec::new();
    for i in 0..200 {
        lines.push(match i % 7 {
            0 => format!("{{\"text\": {i}}}"),
            3 => "   ".to_string(),
            _ => format!("{{\"text\": \"doc {i}\"}}"),
        });
    }
    let block = LineBlock { bytes: lines.join("\n").into_bytes(), first_line: 41 };
    assert_eq!(block.lines(), 200);
    let expected_texts: Vec<String> =
        (0..200).filter(|i| i % 7 != 0 && i % 7 != 3).map(|i| format!("doc {i}")).collect();
    for parts in [1, 2, 3, 16, 500] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let records = pool.install(|| read_block(&block, "text", parts));
        assert_eq!(records.texts(), expected_texts, "{parts} parts");
        assert_eq!(records.text_bytes(), expected_texts.iter().map(|t| t.len() as u64).sum::<u64>());
        let for_python: Vec<(usize, u64, Vec<u8>)> =
            records.for_python.iter().map(|line| (line.before, line.number, line.line.clone())).collect();
        let expected: Vec<(usize, u64, Vec<u8>)> = (0..200)
            .filter(|i| i % 7 == 0)
            .map(|i| {
                let before = expected_texts.iter().take_while(|t| t[4..].parse::<usize>().unwrap() < i).count();
                (before, 41 + i as u64, format!("{{\"text\": {i}}}").into_bytes())
            })
            .collect();
        assert_eq!(for_python, expected, "{parts} parts");
    }
}
