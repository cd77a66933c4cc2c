use super::*;
use crate::ops::launch::Hosts;

fn options(names: &[&str]) -> Options {
    Options {
        fleet: Hosts {
            names: names.iter().map(|s| s.to_string()).collect(),
            ..Hosts::default()
        },
        ..Options::default()
    }
}

#[test]
fn bad_combinations_are_refused_before_anything_runs() {
    let mut o = options(&["a", "local"]);
    assert_eq!(check(&o).unwrap(), Mode::Across, "the default");
    o.fleet.spread = true;
    assert_eq!(check(&o).unwrap(), Mode::Spread);
    o.fleet.across = true;
    let e = check(&o).unwrap_err().to_string();
    assert!(e.contains("--across") && e.contains("--spread"), "{e}");

    let mut o = options(&["a"]);
    o.shard = Some("1/2".parse().unwrap());
    let e = check(&o).unwrap_err().to_string();
    assert!(e.contains("--shard") && e.contains("--spread"), "{e}");

    let mut o = options(&[]);
    o.fleet.spread = true;
    assert!(check(&o).unwrap_err().to_string().contains("--hosts"));

    let mut o = options(&["a"]);
    o.resume = Some("runs/r".into());
    o.fleet.across = true;
    assert!(check(&o).unwrap_err().to_string().contains("resumed"));

    let e = check(&options(&["a", "b", "a"])).unwrap_err().to_string();
    assert!(e.contains("twice"), "{e}");
}

#[test]
fn a_run_is_a_fleet_run_by_its_hosts_or_its_fleet_json() {
    assert!(is_fleet(&options(&["local"])));
    assert!(!is_fleet(&options(&[])));
    let tmp = tempfile::tempdir().unwrap();
    let mut o = options(&[]);
    o.resume = Some(tmp.path().to_owned());
    assert!(!is_fleet(&o));
    std::fs::write(tmp.path().join(run_dir::FLEET), "{}").unwrap();
    assert!(is_fleet(&o));
}
