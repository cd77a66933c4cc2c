use super::loaded::Change;
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

/// The ends of the stages a build's output names, read line by line.
fn stage_ends(output: &str) -> Vec<String> {
    let mut stages = stages::Stages::default();
    output.lines().for_each(|line| stages.read(line));
    stages.ends()
}

#[test]
fn a_multi_stage_build_names_the_end_of_each_stage_last_first() {
    // The classic builder's output of a probe's build (Engine 20.10), a step from the cache.
    let output = "\
Step 1/9 : ARG BASE
Step 2/9 : ARG SAMPLER
Step 3/9 : FROM ${SAMPLER} AS sampler
 ---> 5d0da3dc9764
Step 4/9 : FROM ${BASE} AS build
 ---> 0c62b8b4a1e2
Step 5/9 : COPY probe.c /src/probe.c
 ---> Using cache
 ---> 8f3e2c1a9b7d
Step 6/9 : RUN gcc -O2 -o /probe /src/probe.c
 ---> Running in 1b2c3d4e5f60
Removing intermediate container 1b2c3d4e5f60
 ---> a41f0e9c2d3b
Step 7/9 : FROM ${BASE}
 ---> 0c62b8b4a1e2
Step 8/9 : COPY --from=sampler /sampler /usr/local/bin/sampler
 ---> 77aa01bc23de
Step 9/9 : COPY --from=build /probe /usr/local/bin/probe
 ---> 9e8d7c6b5a49
Successfully built 9e8d7c6b5a49
Successfully tagged parkbench/c-probe:0123456789abcdef
";
    assert_eq!(
        stage_ends(output),
        ["9e8d7c6b5a49", "a41f0e9c2d3b", "5d0da3dc9764"],
        "the built image, the build stage's last step, the sampler stage's image"
    );
}

#[test]
fn a_failed_build_names_the_last_step_it_committed() {
    let output = "\
Step 1/6 : ARG BASE
Step 2/6 : FROM ${BASE} AS build
 ---> 0c62b8b4a1e2
Step 3/6 : COPY broken.c /src/broken.c
 ---> 8f3e2c1a9b7d
Step 4/6 : RUN gcc -o /probe /src/broken.c
 ---> Running in 1b2c3d4e5f60
/src/broken.c:2:12: error: 'x' undeclared (first use in this function)
";
    assert_eq!(stage_ends(output), ["8f3e2c1a9b7d"]);
}

#[test]
fn podman_s_output_names_its_stages_too_and_other_lines_name_none() {
    let output = "\
STEP 1/4: FROM localhost/parkbench/base:1 AS build
STEP 2/4: RUN echo made > /made
--> Using cache 3f2a9c0d1b7e44556677889900aabbccddeeff00112233445566778899aabbcc
--> 3f2a9c0d1b7e
STEP 3/4: FROM localhost/parkbench/base:1
STEP 4/4: COPY --from=build /made /made
COMMIT parkbench/made:1
--> 6a5b4c3d2e1f
 ---> Running in 0123456789abcdef
 ---> not-an-id-at-all
 ---> 12345
";
    assert_eq!(stage_ends(output), ["6a5b4c3d2e1f", "3f2a9c0d1b7e"]);
}

#[test]
fn an_image_the_engine_held_before_the_build_is_never_an_end_to_remove() {
    // A step of an archive's recipe may print `---> <id>` of any image the Engine holds.
    let before =
        ["sha256:5d0da3dc9764aaaabbbbccccddddeeeeffff0000111122223333444455556666".to_string()];
    let mut stages = stages::Stages::new(before.into_iter().collect());
    let output = "\
Step 1/3 : FROM base AS build
 ---> 0c62b8b4a1e2
Step 2/3 : RUN echo ' ---> 5d0da3dc9764'
 ---> 5d0da3dc9764
Step 3/3 : FROM base
 ---> 0c62b8b4a1e2
";
    output.lines().for_each(|line| stages.read(line));
    assert_eq!(stages.ends(), ["0c62b8b4a1e2"]);
}

#[test]
fn a_link_in_an_image_leads_beside_it_or_to_its_absolute_target_never_above_the_root() {
    assert_eq!(
        super::link_target("/usr/bin/ruby", "ruby3.1"),
        "/usr/bin/ruby3.1"
    );
    assert_eq!(
        super::link_target("/usr/bin/java", "/etc/alternatives/java"),
        "/etc/alternatives/java"
    );
    assert_eq!(super::link_target("/usr/bin/x", "../lib/./x"), "/usr/lib/x");
    assert_eq!(super::link_target("/a/x", "../../../../etc/y"), "/etc/y");
}

#[test]
fn what_builds_leave_is_removed_only_once_none_is_under_way() {
    let in_flight = stages::InFlight::default();
    let before = std::sync::Arc::new(std::collections::HashSet::new());
    let left = |id: &str| vec![stages::Leftover::new(id, "t", before.clone())];
    in_flight.begin();
    in_flight.begin();
    // The first build to end may have left an image the other one took from the cache.
    assert!(in_flight.end(left("a")).is_empty());
    let all: Vec<String> = in_flight.end(left("b")).into_iter().map(|l| l.id).collect();
    assert_eq!(all, ["a", "b"]);
    in_flight.begin();
    assert_eq!(in_flight.end(Vec::new()).len(), 0);
}
