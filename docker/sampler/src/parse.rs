//! Parsers for the sampler's inputs: CPU lists, `/proc/<pid>/status` and the probe's
//! `key=value` metrics.

use crate::json::Value;

/// Highest CPU number + 1 that a `cpu_set_t` can hold.
pub const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// Parses a CPU list in the kernel's list format (`0-3,6`, as in `Cpus_allowed_list`) into
/// sorted, distinct CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty CPU list".into());
    }
    let mut cpus = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((lo, hi)) => (parse_cpu(lo, text)?, parse_cpu(hi, text)?),
            None => {
                let cpu = parse_cpu(item, text)?;
                (cpu, cpu)
            }
        };
        if lo > hi {
            return Err(format!("CPU list {text:?}: range {item:?} runs backwards"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn parse_cpu(item: &str, list: &str) -> Result<usize, String> {
    let item = item.trim();
    if item.is_empty() || !item.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("CPU list {list:?}: {item:?} is not a CPU number"));
    }
    match item.parse::<usize>() {
        Ok(cpu) if cpu < MAX_CPUS => Ok(cpu),
        _ => Err(format!(
            "CPU list {list:?}: CPU {item} is beyond the limit of {MAX_CPUS}"
        )),
    }
}

/// Formats sorted, distinct CPU numbers in the kernel's list format.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// The fields the sampler reads from `/proc/<pid>/status`. Sizes in KiB.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcStatus {
    pub vm_rss_kib: Option<u64>,
    pub vm_hwm_kib: Option<u64>,
    pub rss_anon_kib: Option<u64>,
    pub rss_file_kib: Option<u64>,
    pub threads: Option<u64>,
    pub cpus_allowed_list: Option<String>,
}

/// Parses the text of `/proc/<pid>/status`. Unknown or malformed lines are skipped; a process
/// that has exited (a zombie) has no `VmRSS` line, which shows as `vm_rss_kib: None`.
pub fn parse_status(text: &str) -> ProcStatus {
    let mut st = ProcStatus::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "VmRSS" => st.vm_rss_kib = parse_kib(value),
            "VmHWM" => st.vm_hwm_kib = parse_kib(value),
            "RssAnon" => st.rss_anon_kib = parse_kib(value),
            "RssFile" => st.rss_file_kib = parse_kib(value),
            "Threads" => st.threads = value.parse().ok(),
            "Cpus_allowed_list" => st.cpus_allowed_list = Some(value.to_owned()),
            _ => {}
        }
    }
    st
}

/// `"1234 kB"` → 1234 (the kernel's "kB" is KiB).
fn parse_kib(value: &str) -> Option<u64> {
    let number = value.strip_suffix("kB").unwrap_or(value).trim();
    number.parse().ok()
}

impl ProcStatus {
    /// The memory and thread fields as a JSON object, optionally preceded by `t_ms`.
    pub fn to_json(&self, t_ms: Option<f64>) -> Value {
        let mut fields = Vec::new();
        if let Some(t) = t_ms {
            fields.push(("t_ms".to_owned(), Value::opt_ms(Some(t))));
        }
        fields.extend([
            ("vm_rss_kib".to_owned(), Value::opt_u64(self.vm_rss_kib)),
            ("vm_hwm_kib".to_owned(), Value::opt_u64(self.vm_hwm_kib)),
            ("rss_anon_kib".to_owned(), Value::opt_u64(self.rss_anon_kib)),
            ("rss_file_kib".to_owned(), Value::opt_u64(self.rss_file_kib)),
            ("threads".to_owned(), Value::opt_u64(self.threads)),
        ]);
        Value::Obj(fields)
    }
}

/// A probe line: its first word (`baseline`, `ready`, `done`) and its `key=value` metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeLine {
    pub word: String,
    pub metrics: Vec<(String, Value)>,
}

impl ProbeLine {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metrics.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn metrics_json(&self) -> Value {
        Value::Obj(self.metrics.clone())
    }
}

/// Splits a probe line into its first word and `key=value` pairs separated by whitespace.
/// Values that read as numbers become JSON numbers, everything else strings. A token without
/// `=`, an empty key or a repeated key is an error.
pub fn parse_probe_line(line: &str) -> Result<ProbeLine, String> {
    let mut tokens = line.split_whitespace();
    let word = tokens.next().unwrap_or("").to_owned();
    let mut metrics: Vec<(String, Value)> = Vec::new();
    for token in tokens {
        let Some((key, value)) = token.split_once('=') else {
            return Err(format!("{token:?} is not key=value"));
        };
        if key.is_empty() {
            return Err(format!("{token:?} has an empty key"));
        }
        if metrics.iter().any(|(k, _)| k == key) {
            return Err(format!("key {key:?} appears twice"));
        }
        metrics.push((key.to_owned(), parse_metric_value(value)));
    }
    Ok(ProbeLine { word, metrics })
}

/// A metric value as a JSON value: integers exactly, other finite decimal numbers as floats,
/// anything else (including `inf`, `NaN`, hex) as a string.
pub fn parse_metric_value(value: &str) -> Value {
    if let Ok(n) = value.parse::<u64>() {
        return Value::UInt(n);
    }
    if let Ok(n) = value.parse::<i64>() {
        return Value::Int(n);
    }
    let looks_decimal = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
        && value.bytes().any(|b| b.is_ascii_digit());
    if looks_decimal
        && let Ok(x) = value.parse::<f64>()
        && x.is_finite()
    {
        return Value::Float(x, None);
    }
    Value::Str(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_single_and_ranges() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("0-3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list(" 6,0-1,1 \n").unwrap(), vec![0, 1, 6]);
        assert_eq!(parse_cpu_list("5-5").unwrap(), vec![5]);
    }

    #[test]
    fn cpu_list_errors() {
        for bad in [
            "",
            " ",
            "a",
            "1-",
            "-1",
            "3-1",
            "0,,1",
            "1.5",
            "0-3:2",
            "+1",
            "1024",
            "99999999999999999999",
        ] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_cpu_list("1023").is_ok());
    }

    #[test]
    fn cpu_list_round_trip() {
        for text in ["0", "0-3", "0-3,6", "1,3,5-7,9"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
        assert_eq!(format_cpu_list(&[]), "");
    }

    const STATUS: &str = "Name:\tprobe\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t42\n\
        VmPeak:\t  123456 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1900 kB\nRssAnon:\t     800 kB\n\
        RssFile:\t    1100 kB\nRssShmem:\t       0 kB\nThreads:\t5\n\
        Cpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n";

    #[test]
    fn status_fields() {
        let st = parse_status(STATUS);
        assert_eq!(
            st,
            ProcStatus {
                vm_rss_kib: Some(1900),
                vm_hwm_kib: Some(2048),
                rss_anon_kib: Some(800),
                rss_file_kib: Some(1100),
                threads: Some(5),
                cpus_allowed_list: Some("0-1".into()),
            }
        );
        assert_eq!(
            st.to_json(Some(500.25)).to_json(),
            r#"{"t_ms":500.250,"vm_rss_kib":1900,"vm_hwm_kib":2048,"rss_anon_kib":800,"rss_file_kib":1100,"threads":5}"#
        );
    }

    #[test]
    fn status_of_a_zombie_has_no_rss() {
        let st =
            parse_status("Name:\tprobe\nState:\tZ (zombie)\nThreads:\t1\nCpus_allowed_list:\t0\n");
        assert_eq!(st.vm_rss_kib, None);
        assert_eq!(st.threads, Some(1));
        assert_eq!(
            st.to_json(None).to_json(),
            r#"{"vm_rss_kib":null,"vm_hwm_kib":null,"rss_anon_kib":null,"rss_file_kib":null,"threads":1}"#
        );
    }

    #[test]
    fn status_skips_garbage() {
        let st = parse_status("VmRSS:\tlots kB\nnonsense\nThreads:\t7\n");
        assert_eq!(st.vm_rss_kib, None);
        assert_eq!(st.threads, Some(7));
    }

    #[test]
    fn probe_line_words_and_metrics() {
        let l = parse_probe_line(
            "ready goroutines=1001 stack_inuse_bytes=2048000 ratio=0.5 neg=-2 name=go1.26",
        )
        .unwrap();
        assert_eq!(l.word, "ready");
        assert_eq!(
            l.metrics,
            vec![
                ("goroutines".into(), Value::UInt(1001)),
                ("stack_inuse_bytes".into(), Value::UInt(2_048_000)),
                ("ratio".into(), Value::Float(0.5, None)),
                ("neg".into(), Value::Int(-2)),
                ("name".into(), Value::Str("go1.26".into())),
            ]
        );
        assert_eq!(l.get("goroutines"), Some(&Value::UInt(1001)));
        assert_eq!(
            l.metrics_json().to_json(),
            r#"{"goroutines":1001,"stack_inuse_bytes":2048000,"ratio":0.5,"neg":-2,"name":"go1.26"}"#
        );
        let l = parse_probe_line("  baseline\r").unwrap();
        assert_eq!((l.word.as_str(), l.metrics.len()), ("baseline", 0));
        assert_eq!(parse_probe_line("").unwrap().word, "");
    }

    #[test]
    fn probe_line_values_that_are_not_numbers() {
        assert_eq!(parse_metric_value("inf"), Value::Str("inf".into()));
        assert_eq!(parse_metric_value("NaN"), Value::Str("NaN".into()));
        assert_eq!(parse_metric_value("1e999"), Value::Str("1e999".into()));
        assert_eq!(parse_metric_value("0x10"), Value::Str("0x10".into()));
        assert_eq!(parse_metric_value("-"), Value::Str("-".into()));
        assert_eq!(parse_metric_value(""), Value::Str("".into()));
        assert_eq!(parse_metric_value("a\"b"), Value::Str("a\"b".into()));
        assert_eq!(parse_metric_value("1.5e3"), Value::Float(1500.0, None));
        assert_eq!(parse_metric_value("007"), Value::UInt(7));
    }

    #[test]
    fn probe_line_errors() {
        assert!(parse_probe_line("ready tasks").is_err());
        assert!(parse_probe_line("ready =5").is_err());
        assert!(parse_probe_line("ready a=1 a=2").is_err());
        // A value may itself contain '='.
        assert_eq!(
            parse_probe_line("done k=a=b").unwrap().get("k"),
            Some(&Value::Str("a=b".into()))
        );
    }
}
