//! Which SIMD level the pre-tokenizer's block scanners run at: the best the
//! CPU has, capped by the environment variable `BPEFORGE_SIMD`
//! (`baseline`, `avx2`, `avx512`, `neon` or `auto`), read once.
//!
//! Why a cap: most machines users have lack AVX-512 (cloud VMs before Zen 4
//! or Ice Lake) or are aarch64, and without a cap the AVX2 and baseline
//! paths could be neither benchmarked nor tested on the machines where the
//! work is done. A cap never raises the level above what the CPU has: such a
//! cap, or a value that is no level, leaves a note (`SimdReport::note`,
//! printed once to stderr) and the best level under it runs.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// The environment variable that caps the level.
pub const SIMD_ENV: &str = "BPEFORGE_SIMD";

/// The implementations of the block classifier a CPU may have, best last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdLevel {
    /// SSE2 on x86-64 (part of its baseline), a byte at a time from a table
    /// elsewhere: there on every CPU.
    Baseline,
    /// AVX2, with BMI1/2, POPCNT and LZCNT for the rest of the loop (every
    /// CPU with AVX2 has them): 32 bytes a compare.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512BW (and the same scalar extensions): a compare of 64 bytes
    /// gives a mask directly, in a mask register.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// NEON (Advanced SIMD), part of every aarch64 CPU: 16 bytes a compare.
    #[cfg(target_arch = "aarch64")]
    Neon,
}

/// The names `BPEFORGE_SIMD` takes, on any platform (a level of another
/// platform is "above what the CPU has").
const NAMES: &[&str] = &["baseline", "avx2", "avx512", "neon"];

impl SimdLevel {
    /// The levels of this platform, best last.
    #[cfg(target_arch = "x86_64")]
    pub const ALL: &'static [SimdLevel] = &[SimdLevel::Baseline, SimdLevel::Avx2, SimdLevel::Avx512];
    #[cfg(target_arch = "aarch64")]
    pub const ALL: &'static [SimdLevel] = &[SimdLevel::Baseline, SimdLevel::Neon];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub const ALL: &'static [SimdLevel] = &[SimdLevel::Baseline];

    /// The name `BPEFORGE_SIMD` and `build_info` use.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Baseline => "baseline",
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => "avx512",
            #[cfg(target_arch = "aarch64")]
            SimdLevel::Neon => "neon",
        }
    }

    /// The level of this platform called `name`.
    pub fn from_name(name: &str) -> Option<SimdLevel> {
        SimdLevel::ALL.iter().copied().find(|level| level.name() == name)
    }

    /// Whether this CPU has the level's instructions.
    pub fn is_supported(self) -> bool {
        match self {
            SimdLevel::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx2 => {
                std::is_x86_feature_detected!("avx2")
                    && std::is_x86_feature_detected!("bmi1")
                    && std::is_x86_feature_detected!("bmi2")
                    && std::is_x86_feature_detected!("popcnt")
                    && std::is_x86_feature_detected!("lzcnt")
            }
            #[cfg(target_arch = "x86_64")]
            SimdLevel::Avx512 => {
                SimdLevel::Avx2.is_supported()
                    && std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512bw")
            }
            // The aarch64 targets enable NEON: every aarch64 CPU Linux, macOS
            // and Windows run on has it.
            #[cfg(target_arch = "aarch64")]
            SimdLevel::Neon => true,
        }
    }

    /// The best level this CPU has.
    pub fn best() -> SimdLevel {
        SimdLevel::ALL.iter().copied().rfind(|level| level.is_supported()).unwrap_or(SimdLevel::Baseline)
    }

    /// The levels this CPU has, best last.
    pub fn supported() -> Vec<SimdLevel> {
        SimdLevel::ALL.iter().copied().filter(|level| level.is_supported()).collect()
    }

    /// The level the scanners run at: the best under the cap, chosen on the
    /// first call; one load after it.
    #[inline]
    pub fn active() -> SimdLevel {
        #[cfg(test)]
        if let Some(level) = FORCED.with(|forced| forced.get()) {
            return level;
        }
        match ACTIVE.load(Ordering::Relaxed) {
            UNRESOLVED => selection().level,
            index => SimdLevel::ALL[usize::from(index - 1)],
        }
    }

    /// Run the scanners at `level` from now on, in every thread (tests
    /// compare the levels this way in one process). An error names the
    /// levels this CPU has where it lacks `level`.
    pub fn set_active(level: SimdLevel) -> Result<(), String> {
        if !level.is_supported() {
            return Err(format!("this CPU lacks SIMD level {:?}; it has {}", level.name(), supported_names()));
        }
        selection();
        ACTIVE.store(index_of(level), Ordering::Relaxed);
        Ok(())
    }
}

/// What runs and why, for `bpeforge.build_info()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimdReport {
    /// The level the scanners run at now.
    pub level: SimdLevel,
    /// The best level the CPU has.
    pub best: SimdLevel,
    /// `BPEFORGE_SIMD` as it was read (None where unset or empty).
    pub cap: Option<String>,
    /// The CPU features the levels depend on that this CPU has.
    pub cpu_features: Vec<&'static str>,
    /// Why the cap was not taken as given, if it was not.
    pub note: Option<String>,
}

/// `SimdLevel::active` and how it was chosen.
pub fn simd_report() -> SimdReport {
    let selection = selection();
    SimdReport {
        level: SimdLevel::active(),
        best: SimdLevel::best(),
        cap: selection.cap.clone(),
        cpu_features: cpu_features(),
        note: selection.note.clone(),
    }
}

/// Run `body` with the scanners of this thread at `level` (a level the CPU
/// has), whatever the process-wide level: the Rust tests compare every level
/// this way while other tests run beside them.
#[cfg(test)]
pub(crate) fn with_level<T>(level: SimdLevel, body: impl FnOnce() -> T) -> T {
    assert!(level.is_supported(), "{level:?}");
    let before = FORCED.with(|forced| forced.replace(Some(level)));
    let out = body();
    FORCED.with(|forced| forced.set(before));
    out
}

#[cfg(test)]
thread_local! {
    static FORCED: std::cell::Cell<Option<SimdLevel>> = const { std::cell::Cell::new(None) };
}

/// `ACTIVE` before the first call: then 1 + the index in `ALL`.
const UNRESOLVED: u8 = 0;
static ACTIVE: AtomicU8 = AtomicU8::new(UNRESOLVED);

fn index_of(level: SimdLevel) -> u8 {
    let index = SimdLevel::ALL.iter().position(|&l| l == level).expect("a level of this platform");
    u8::try_from(index + 1).expect("a handful of levels")
}

/// The level chosen from `BPEFORGE_SIMD` once, and what was read.
struct Selection {
    level: SimdLevel,
    cap: Option<String>,
    note: Option<String>,
}

fn selection() -> &'static Selection {
    static SELECTION: OnceLock<Selection> = OnceLock::new();
    SELECTION.get_or_init(|| {
        let cap = std::env::var(SIMD_ENV).ok().map(|value| value.trim().to_ascii_lowercase()).filter(|v| !v.is_empty());
        let (level, note) = choose(cap.as_deref());
        if let Some(note) = &note {
            eprintln!("bpeforge: {note}");
        }
        // A `set_active` that raced this first call keeps its level.
        let _ = ACTIVE.compare_exchange(UNRESOLVED, index_of(level), Ordering::Relaxed, Ordering::Relaxed);
        Selection { level, cap, note }
    })
}

/// The level under `cap` (a value of `BPEFORGE_SIMD`), and a note where the
/// cap is no level name or above what this CPU has.
fn choose(cap: Option<&str>) -> (SimdLevel, Option<String>) {
    let best = SimdLevel::best();
    let Some(cap) = cap.filter(|&cap| cap != "auto") else { return (best, None) };
    let Some(level) = SimdLevel::from_name(cap) else {
        let note = if NAMES.contains(&cap) {
            format!(
                "{SIMD_ENV}={cap} is a level of another platform; this CPU has {}: running {}",
                supported_names(),
                best.name()
            )
        } else {
            format!("{SIMD_ENV}={cap:?} is not one of auto, {}: running {}", NAMES.join(", "), best.name())
        };
        return (best, Some(note));
    };
    if level.is_supported() {
        return (level, None);
    }
    let below = SimdLevel::supported().into_iter().rfind(|l| index_of(*l) < index_of(level));
    let running = below.unwrap_or(SimdLevel::Baseline);
    let note =
        format!("{SIMD_ENV}={cap} is above what this CPU has ({}): running {}", supported_names(), running.name());
    (running, Some(note))
}

fn supported_names() -> String {
    SimdLevel::supported().iter().map(|level| level.name()).collect::<Vec<_>>().join(", ")
}

/// The CPU features the levels depend on that this CPU has.
fn cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut features = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        let detected = [
            ("sse2", std::is_x86_feature_detected!("sse2")),
            ("avx2", std::is_x86_feature_detected!("avx2")),
            ("bmi1", std::is_x86_feature_detected!("bmi1")),
            ("bmi2", std::is_x86_feature_detected!("bmi2")),
            ("popcnt", std::is_x86_feature_detected!("popcnt")),
            ("lzcnt", std::is_x86_feature_detected!("lzcnt")),
            ("avx512f", std::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::is_x86_feature_detected!("avx512bw")),
        ];
        features.extend(detected.iter().filter(|(_, on)| *on).map(|(name, _)| *name));
    }
    #[cfg(target_arch = "aarch64")]
    if std::arch::is_aarch64_feature_detected!("neon") {
        features.push("neon");
    }
    features
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_and_no_cap_run_the_best_level() {
        assert_eq!(choose(None), (SimdLevel::best(), None));
        assert_eq!(choose(Some("auto")), (SimdLevel::best(), None));
    }

    #[test]
    fn a_cap_the_cpu_has_is_taken_as_given() {
        for level in SimdLevel::supported() {
            assert_eq!(choose(Some(level.name())), (level, None));
        }
    }

    #[test]
    fn a_cap_that_is_no_level_runs_the_best_and_says_so() {
        let (level, note) = choose(Some("sse9"));
        assert_eq!(level, SimdLevel::best());
        assert!(note.unwrap().contains("\"sse9\" is not one of auto, baseline, avx2, avx512, neon"));
    }

    #[test]
    fn a_cap_above_the_cpu_or_of_another_platform_runs_the_best_below_and_says_so() {
        for name in NAMES {
            let (level, note) = choose(Some(name));
            match SimdLevel::from_name(name) {
                Some(capped) if capped.is_supported() => assert_eq!((level, note), (capped, None)),
                Some(capped) => {
                    assert!(index_of(level) < index_of(capped) && level.is_supported());
                    assert!(note.unwrap().contains("above what this CPU has"), "{name}");
                }
                None => assert!(note.unwrap().contains("another platform"), "{name}"),
            }
        }
    }

    #[test]
    fn a_forced_level_applies_to_this_thread_only() {
        for level in SimdLevel::supported() {
            with_level(level, || {
                assert_eq!(SimdLevel::active(), level);
                let elsewhere = std::thread::spawn(SimdLevel::active).join().unwrap();
                assert!(elsewhere.is_supported());
            });
        }
    }

    #[test]
    fn the_report_lists_the_features_of_the_best_level() {
        let report = simd_report();
        assert!(report.level.is_supported());
        #[cfg(target_arch = "x86_64")]
        assert!(report.cpu_features.contains(&"sse2"));
        #[cfg(target_arch = "x86_64")]
        if report.best == SimdLevel::Avx512 {
            assert!(report.cpu_features.contains(&"avx512bw"));
        }
        #[cfg(target_arch = "aarch64")]
        assert_eq!(report.best, SimdLevel::Neon);
    }
}
