use super::*;

fn list(entries: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
    let owned = |tags: &[&str]| tags.iter().map(|t| t.to_string()).collect();
    entries
        .iter()
        .map(|(i, t)| (i.to_string(), owned(t)))
        .collect()
}

#[test]
fn what_a_load_added_or_moved_is_told_from_what_others_made() {
    let before = list(&[
        ("sha256:old", &["parkbench/probe-go:1"]),
        ("sha256:mine", &[]),
    ]);
    let after = list(&[
        ("sha256:old", &[]),
        ("sha256:loaded", &["q/probe-go:1", "extra:1"]),
        ("sha256:evil", &["parkbench/probe-go:1"]),
        ("sha256:hidden", &[]),
        ("sha256:built", &["someone/else:2"]),
        ("sha256:mine", &["mine:1"]),
    ]);
    let change = Change::between(&before, &after, "sha256:loaded", "q/probe-go:1");
    let reported = [
        "parkbench/probe-go:1".to_string(),
        "sha256:hidden".to_string(),
    ];
    let (made, mut others) = change.split(&reported, "sha256:loaded");
    others.sort();
    assert_eq!(
        made,
        [
            "parkbench/probe-go:1",
            "extra:1",
            "sha256:evil",
            "sha256:hidden"
        ],
        "tags (a moved one too) before images, each the load made or reported"
    );
    assert_eq!(others, ["mine:1", "sha256:built", "someone/else:2"]);
}

#[test]
fn podmans_registry_prefix_is_taken_off_the_kits_tags_and_nothing_else() {
    assert_eq!(local_name("docker.io/parkbench/go:1"), "parkbench/go:1");
    assert_eq!(local_name("localhost/parkbench/go:1"), "parkbench/go:1");
    assert_eq!(local_name("parkbench/go:1"), "parkbench/go:1");
    // A registry's own short name keeps its registry: it is not one of the kit's tags.
    assert_eq!(local_name("docker.io/debian:12"), "docker.io/debian:12");
    assert_eq!(
        local_name("example.org/parkbench/go:1"),
        "example.org/parkbench/go:1"
    );
    assert_eq!(local_name("<none>:<none>"), "<none>:<none>");
}
