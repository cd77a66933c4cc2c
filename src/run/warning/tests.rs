//! Validity warnings on fixed readings: each parser and each threshold.

use super::*;

const STAT: &str = "cpu  300 0 60 900 10 0 5 20 0 0\n\
    cpu0 100 0 20 300 5 0 2 10 0 0\n\
    cpu1 200 1 40 600 5 3 3 10 0 0\n\
    intr 12345 0 0\n\
    ctxt 999\n";

fn times(cpus: &[(usize, u64, u64, u64)]) -> CpuTimes {
    CpuTimes(
        cpus.iter()
            .map(|&(c, busy, idle, steal)| (c, Ticks { busy, idle, steal }))
            .collect(),
    )
}

#[test]
fn proc_stat_gives_each_cpu_and_skips_the_aggregate() {
    let t = CpuTimes::parse(STAT);
    assert_eq!(t.0.keys().copied().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(
        t.0[&1],
        Ticks {
            busy: 200 + 1 + 40 + 3 + 3,
            idle: 605,
            steal: 10
        }
    );
    // An old kernel without the steal column.
    let old = CpuTimes::parse("cpu3 1 2 3 4\n");
    assert_eq!(old.0[&3].steal, 0);
    assert_eq!(old.0[&3].busy, 6);
}

#[test]
fn meminfo_gives_swap_in_bytes() {
    let text =
        "MemTotal: 16384 kB\nSwapCached: 0 kB\nSwapTotal: 2097152 kB\nSwapFree: 1572864 kB\n";
    let s = swap(text).unwrap();
    assert_eq!((s.total_bytes, s.free_bytes), (2048 << 20, 1536 << 20));
    assert_eq!(swap("MemTotal: 1 kB\n"), None, "no made-up swap");
}

#[test]
fn thp_and_psi_readings() {
    assert_eq!(
        bracketed("always [madvise] never\n").as_deref(),
        Some("madvise")
    );
    assert_eq!(
        bracketed("[always] madvise never").as_deref(),
        Some("always")
    );
    assert_eq!(bracketed("always madvise never"), None);
    let psi = "some avg10=1.25 avg60=0.50 avg300=0.10 total=123\nfull avg10=0.40 avg60=0.00 avg300=0.00 total=9\n";
    assert_eq!(some_avg10(psi), Some(1.25));
    assert_eq!(some_avg10("full avg10=2.00 total=1\n"), None);
}

#[test]
fn a_quiet_host_gives_no_warning() {
    let quiet = Readings {
        swap: Some(Swap {
            total_bytes: 1 << 30,
            free_bytes: 1 << 30,
        }),
        thp: Some("madvise".into()),
        governors: vec![(0, "performance".into())],
        memory_pressure: Some(0.0),
        busy: vec![(0, 0.02), (1, BUSY_LIMIT)],
    };
    assert_eq!(from_readings(&quiet), vec![]);
    assert_eq!(
        from_readings(&Readings::default()),
        vec![],
        "nothing visible"
    );
}

#[test]
fn each_reading_over_its_threshold_warns_with_its_value() {
    let noisy = Readings {
        swap: Some(Swap {
            total_bytes: 2048 << 20,
            free_bytes: 1536 << 20,
        }),
        thp: Some("always".into()),
        governors: vec![
            (0, "powersave".into()),
            (1, "performance".into()),
            (2, "powersave".into()),
        ],
        memory_pressure: Some(0.37),
        busy: vec![(0, 0.05), (1, 0.42)],
    };
    let w = from_readings(&noisy);
    let touches: Vec<Touches> = w.iter().map(|w| w.touches).collect();
    assert_eq!(
        touches,
        [
            Touches::All,
            Touches::Memory,
            Touches::Time,
            Touches::All,
            Touches::Time
        ]
    );
    assert!(
        w[0].what.starts_with("swap in use: 512 MiB of 2048 MiB"),
        "{}",
        w[0].what
    );
    assert!(w[1].what.contains("2 MiB"));
    assert!(
        w[2].what.contains("`powersave` on CPUs 0,2"),
        "{}",
        w[2].what
    );
    assert!(w[3].what.contains("0.37 %"), "{}", w[3].what);
    assert!(
        w[4].what.contains("CPU 1 42 %") && !w[4].what.contains("CPU 0"),
        "{}",
        w[4].what
    );
}

#[test]
fn busy_share_is_per_pinned_cpu_over_the_window() {
    let start = times(&[(0, 100, 900, 0), (1, 100, 900, 0), (2, 0, 0, 0)]);
    let end = times(&[(0, 150, 950, 0), (1, 101, 999, 0), (2, 0, 0, 0)]);
    let busy = busy_between(&start, &end, &[0, 1, 2, 7]);
    assert_eq!(busy, vec![(0, 0.5), (1, 0.01)], "no time, no CPU: left out");
}

#[test]
fn steal_counts_only_the_pinned_cpus_and_needs_more_than_one_percent() {
    let start = times(&[(0, 0, 0, 0), (1, 0, 0, 0)]);
    // CPU 1 had 5 % steal, CPU 0 none: 2.5 % over both, 5 % over CPU 1 alone.
    let end = times(&[(0, 500, 500, 0), (1, 450, 500, 50)]);
    let both = steal_between(&start, &end, &[0, 1]).unwrap();
    assert_eq!(both.touches, Touches::Time);
    assert!(
        both.what.starts_with("steal time 2.5 % of pinned CPUs 0-1"),
        "{}",
        both.what
    );
    assert!(steal_between(&start, &end, &[0]).is_none());
    let one_percent = times(&[(0, 495, 495, 10)]);
    assert!(
        steal_between(&start, &one_percent, &[0]).is_none(),
        "1 % exactly is not over"
    );
    assert!(
        steal_between(&start, &end, &[5]).is_none(),
        "an unseen CPU counts nothing"
    );
}

#[test]
fn warnings_are_recorded_lowercase() {
    let w = Warning::new(Touches::Memory, "x".into());
    let json = serde_json::to_string(&w).unwrap();
    assert_eq!(json, r#"{"what":"x","touches":"memory"}"#);
    assert_eq!(serde_json::from_str::<Warning>(&json).unwrap(), w);
}

#[test]
fn only_busy_cpus_steal_and_memory_pressure_say_the_machine_was_not_quiet() {
    let noisy = Readings {
        swap: Some(Swap {
            total_bytes: 2048 << 20,
            free_bytes: 1536 << 20,
        }),
        thp: Some("always".into()),
        governors: vec![(0, "powersave".into())],
        memory_pressure: Some(1.37),
        busy: vec![(1, 0.42)],
    };
    let not_quiet: Vec<bool> = from_readings(&noisy)
        .iter()
        .map(Warning::says_not_quiet)
        .collect();
    // swap, hugepages, governor: settings; pressure and busy CPUs: other work.
    assert_eq!(not_quiet, [false, false, false, true, true]);
    let start = times(&[(0, 0, 0, 0)]);
    let steal = steal_between(&start, &times(&[(0, 450, 500, 50)]), &[0]).unwrap();
    assert!(steal.says_not_quiet(), "{}", steal.what);
    let seccomp = seccomp_beyond_default("seccomp.json", &["ptrace".into()]);
    assert!(!seccomp.says_not_quiet());
    // As recorded in an older run.json: judged by its text.
    let old: Warning = serde_json::from_str(
        r#"{"what":"steal time 3.0 % of pinned CPUs 0-1's time while measuring","touches":"time"}"#,
    )
    .unwrap();
    assert!(old.says_not_quiet());
}

#[test]
fn a_memory_stall_below_one_percent_is_recorded_but_leaves_the_machine_quiet() {
    let light = Readings {
        memory_pressure: Some(0.02),
        ..Readings::default()
    };
    let warnings = from_readings(&light);
    assert_eq!(warnings.len(), 1, "the stall is still recorded");
    assert!(!warnings[0].says_not_quiet(), "{}", warnings[0].what);
    let heavy = Readings {
        memory_pressure: Some(1.0),
        ..Readings::default()
    };
    assert!(from_readings(&heavy)[0].says_not_quiet());
}
