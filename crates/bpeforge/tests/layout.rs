//! The crate's layout, read from its source as text: the folders under
//! `src/` import each other without a cycle, no hand-written file is over
//! `MAX_LINES` lines, and the root holds at most `MAX_ROOT_ENTRIES` entries.
//!
//! Why: a folder is one concept (the pre-tokenizer, the merges, the encoder,
//! ...), and the layers stay readable only while each can be understood
//! from those below it. Only code outside `#[cfg(test)]` modules counts:
//! a test may check one layer against a higher one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 700;
const MAX_ROOT_ENTRIES: usize = 12;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to: its folder under `src/`, or the
/// file's own name for a file at the root.
fn top_level(file: &Path) -> String {
    let relative = file.strip_prefix(src_dir()).unwrap();
    let first = relative.components().next().unwrap().as_os_str().to_str().unwrap();
    first.trim_end_matches(".rs").to_string()
}

/// The file's code outside test modules and comments: a `tests.rs` has none;
/// elsewhere the text stops at `#[cfg(test)]` followed by `mod tests`, which
/// this crate keeps at the end of a file.
fn non_test_code(file: &Path, text: &str) -> String {
    if file.file_name().is_some_and(|name| name == "tests.rs") {
        return String::new();
    }
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let next = lines.peek().map(|next| next.trim_start()).unwrap_or("");
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod tests") {
            break;
        }
        let line = line.split("//").next().unwrap();
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The names that follow `crate::` in `code`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    code.match_indices("crate::")
        .filter(|&(at, _)| {
            at == 0 || !code.as_bytes()[at - 1].is_ascii_alphanumeric() && code.as_bytes()[at - 1] != b'_'
        })
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
        })
        .collect()
}

/// The modules `lib.rs` declares.
fn top_level_modules() -> BTreeSet<String> {
    let lib = fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix("pub(crate) mod ").or_else(|| line.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').to_string())
        })
        .collect()
}

/// Which top-level modules each one imports, outside tests.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_level_modules();
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let from = top_level(&file);
        if from == "lib" {
            continue;
        }
        let code = non_test_code(&file, &fs::read_to_string(&file).unwrap());
        for name in crate_paths(&code) {
            assert!(
                modules.contains(&name),
                "{}: `crate::{name}` is a re-export of lib.rs; name the module it lives in, so the import graph sees it",
                file.display()
            );
            if name != from {
                graph.entry(from.clone()).or_default().insert(name);
            }
        }
        graph.entry(from).or_default();
    }
    graph
}

/// A cycle in `graph`, as the modules along it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| seen == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn top_level_folders_import_each_other_without_a_cycle() {
    let graph = import_graph();
    assert!(graph.contains_key("bpe") && graph.contains_key("encode"), "the graph was not read: {graph:?}");
    assert!(graph["encode"].contains("bpe"), "the encoder's imports were not read: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle between top-level modules: {}\ngraph: {graph:#?}", cycle.join(" -> "));
    }
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")];
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in edges {
        graph.entry(from.to_string()).or_default().insert(to.to_string());
    }
    assert_eq!(find_cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    graph.get_mut("c").unwrap().remove("a");
    assert_eq!(find_cycle(&graph), None);
}

#[test]
fn only_test_code_is_left_out_of_the_graph() {
    let text =
        "use crate::bpe::Scratch;\n// crate::io in a comment\n#[cfg(test)]\nmod tests {\n    use crate::train;\n}\n";
    let code = non_test_code(Path::new("x.rs"), text);
    assert_eq!(crate_paths(&code), BTreeSet::from(["bpe".to_string()]));
}

#[test]
fn no_hand_written_file_is_over_the_line_limit() {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut over: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = fs::read_to_string(file).unwrap();
            let generated = text.starts_with("// @generated");
            let lines = text.lines().count();
            (!generated && lines > MAX_LINES).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    over.sort();
    assert!(over.is_empty(), "over {MAX_LINES} lines; split by concept (tests may move to a tests.rs): {over:#?}");
}

#[test]
fn the_crate_root_holds_at_most_a_dozen_entries() {
    let entries: Vec<String> =
        fs::read_dir(src_dir()).unwrap().map(|entry| entry.unwrap().file_name().to_string_lossy().into()).collect();
    assert!(entries.len() <= MAX_ROOT_ENTRIES, "{} entries at src/: {entries:?}", entries.len());
}
