//! `hotspot diff` across a shared-library upgrade, end to end (issue 27): `fixtures/vlib.c`
//! built as a library twice, `libvlib.so.1.2` and `libvlib.so.1.3` (different build-ids,
//! installed under different directories), and as a program linked against its soname;
//! the program recorded with each version (LD_LIBRARY_PATH picks it), and the diff matches
//! the library's functions across the two (neither gone nor new), as it matches the
//! program's. Needs root (CAP_BPF + CAP_PERFMON), like every recording test; without it
//! it fails, never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hotspot_testkit::e2e::{hotspot, run_ok, serial, tmp};
use serde_json::Value;

/// Builds libvlib version `version` as `dir/libvlib.so.1.<version>`, with the soname link
/// `libvlib.so.1` (what the program asks for) and the development link `libvlib.so`.
fn library(dir: &Path, version: u32) -> PathBuf {
    std::fs::create_dir_all(dir).expect("library dir");
    let file = dir.join(format!("libvlib.so.1.{version}"));
    common::run_tool(
        Command::new("gcc")
            .args(common::FIXTURE_CFLAGS)
            .args(["-shared", "-fPIC", "-DVLIB_LIBRARY"])
            .arg(format!("-DVLIB_VERSION={version}"))
            .arg("-Wl,-soname,libvlib.so.1")
            .arg("-o")
            .arg(&file)
            .arg(common::fixtures_dir().join("vlib.c")),
    );
    for link in ["libvlib.so.1", "libvlib.so"] {
        std::os::unix::fs::symlink(file.file_name().expect("name"), dir.join(link))
            .expect("symlink");
    }
    file
}

/// Records the program with the library in `lib` into `out`.
fn record(program: &Path, lib: &Path, out: &Path) {
    let _g = serial();
    let done = run_ok(
        hotspot()
            .env("LD_LIBRARY_PATH", lib)
            .args(["record", "-o"])
            .arg(out)
            .arg("--")
            .arg(program)
            .arg("1.5"),
    );
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(err.contains("vlib: library version"), "{err}");
}

/// The module files a capture maps by name (`info --json`'s modules would do as well;
/// the capture reader is the one model).
fn module_paths(capture: &Path) -> Vec<(String, String)> {
    let c = hotspot_replay::Capture::open(capture).expect("capture opens");
    c.modules
        .values()
        .map(|m| {
            let hex: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
            (m.path.clone(), hex)
        })
        .collect()
}

#[test]
fn a_library_upgrade_matches_its_functions() {
    let dir = tmp();
    let (lib_a, lib_b) = (dir.path().join("opt/a/lib"), dir.path().join("usr/b/lib64"));
    let (v2, v3) = (library(&lib_a, 2), library(&lib_b, 3));
    let (id2, id3) = (common::build_id(&v2), common::build_id(&v3));
    assert!(id2.is_some() && id2 != id3, "build-ids {id2:?} {id3:?}");
    let program = dir.path().join("vlib");
    common::run_tool(
        Command::new("gcc")
            .args(common::FIXTURE_CFLAGS)
            .arg("-o")
            .arg(&program)
            .arg(common::fixtures_dir().join("vlib.c"))
            .arg("-L")
            .arg(&lib_a)
            .arg("-lvlib"),
    );
    let (base, new) = (dir.path().join("v2.hsp"), dir.path().join("v3.hsp"));
    record(&program, &lib_a, &base);
    record(&program, &lib_b, &new);

    // Each capture maps its own file of the library: other name, path and build-id.
    let find = |capture: &Path, name: &str| {
        module_paths(capture)
            .into_iter()
            .find(|(p, _)| p.ends_with(name))
            .unwrap_or_else(|| {
                panic!(
                    "{} maps no {name}: {:?}",
                    capture.display(),
                    module_paths(capture)
                )
            })
    };
    let (p2, b2) = find(&base, "libvlib.so.1.2");
    let (p3, b3) = find(&new, "libvlib.so.1.3");
    assert!(
        p2.contains("/opt/a/lib/") && p3.contains("/usr/b/lib64/"),
        "{p2} {p3}"
    );
    assert_eq!(Some(b2.clone()), id2);
    assert_eq!(Some(b3.clone()), id3);
    assert_ne!(b2, b3);

    let out = run_ok(
        hotspot()
            .arg("diff")
            .arg(&base)
            .arg(&new)
            .args(["--format", "json"]),
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("diff JSON");
    let changes = doc["changes"].as_array().expect("changes");
    for name in ["vlib_leaf", "vlib_work", "app_leaf", "main"] {
        let rows: Vec<&Value> = changes.iter().filter(|c| c["name"] == name).collect();
        assert_eq!(
            rows.len(),
            1,
            "{name} is one row, matched across the upgrade: {rows:?}"
        );
        let c = rows[0];
        assert_eq!(c["presence"], "both", "{name}: {c}");
        assert!(
            c["base_total"].as_u64().unwrap_or(0) > 0 && c["new_total"].as_u64().unwrap_or(0) > 0,
            "{name}: {c}"
        );
    }
    let leaf = changes
        .iter()
        .find(|c| c["name"] == "vlib_leaf")
        .expect("vlib_leaf");
    // Shown by the new capture's file name; the same program in both, so no change
    // beyond noise in the library's share.
    assert_eq!(leaf["module"], "libvlib.so.1.3", "{leaf}");
    assert_eq!(leaf["self_significant"], false, "{leaf}");
    let share = leaf["new_self_pct"].as_f64().expect("share");
    assert!(share > 50.0, "vlib_leaf does 3/4 of the work: {leaf}");
    // Nothing of the library is gone or new.
    assert!(
        !changes.iter().any(|c| {
            c["module"]
                .as_str()
                .is_some_and(|m| m.starts_with("libvlib"))
                && c["presence"] != "both"
        }),
        "{changes:?}"
    );
}
