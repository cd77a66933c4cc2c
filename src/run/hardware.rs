//! A machine's hardware class: the facts that make two machines interchangeable for a study — CPU
//! model, logical CPUs, memory band and kernel — as one string. Samples of one class are judged
//! together; samples of different classes are judged per class.

use crate::run::env::Host;

/// `AMD EPYC 7B13 · 2 logical CPUs · ≈8 GiB · Linux 6.1.0-18-amd64`.
pub fn class(host: &Host) -> String {
    clean(&class_of(host))
}

/// A class as read from a file that may be hostile: control characters become spaces, and it is
/// cut at 200 characters, so that it prints as one line.
pub fn clean(class: &str) -> String {
    let one_line: String = class
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    one_line.trim().to_string()
}

fn class_of(host: &Host) -> String {
    let model = match host.cpu_model.trim() {
        "" => "unknown CPU",
        m => m,
    };
    let kernel = match host.kernel_release.trim() {
        "" => "unknown kernel",
        k => k,
    };
    format!(
        "{model} · {} logical CPUs · {} · Linux {kernel}",
        host.logical_cpus,
        memory_band(host.mem_total_bytes)
    )
}

/// The memory total rounded to the nearest power of two GiB (`≈16 GiB` for 15.6 GiB), so that
/// machines sold with the same memory but reserving different amounts for firmware share a band.
pub fn memory_band(bytes: u64) -> String {
    let gib = bytes as f64 / (1u64 << 30) as f64;
    if gib < 0.75 {
        return format!("{} MiB", bytes >> 20);
    }
    let band = 2f64.powi(gib.log2().round() as i32);
    format!("≈{band} GiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machines_with_nearly_the_same_memory_share_a_band() {
        let gib = |g: f64| (g * (1u64 << 30) as f64) as u64;
        assert_eq!(memory_band(gib(15.6)), "≈16 GiB");
        assert_eq!(memory_band(gib(16.0)), "≈16 GiB");
        assert_eq!(memory_band(gib(7.7)), "≈8 GiB");
        assert_eq!(memory_band(gib(62.8)), "≈64 GiB");
        assert_eq!(memory_band(512 << 20), "512 MiB");
        let host = Host {
            cpu_model: "Test CPU".into(),
            logical_cpus: 4,
            mem_total_bytes: gib(7.8),
            kernel_release: "6.1.0".into(),
            ..Host::default()
        };
        assert_eq!(
            class(&host),
            "Test CPU · 4 logical CPUs · ≈8 GiB · Linux 6.1.0"
        );
        let other = Host {
            logical_cpus: 8,
            ..host.clone()
        };
        assert_ne!(class(&host), class(&other));
        let hostile = Host {
            cpu_model: format!("X\n## injected{}", "y".repeat(500)),
            ..host
        };
        let c = class(&hostile);
        assert!(!c.contains('\n') && c.chars().count() <= 200, "{c}");
    }
}
