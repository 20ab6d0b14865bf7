//! Shared helpers for the export tests: the committed fixture captures, and the outside
//! tools the exports are checked with (`go tool pprof`, speedscope's schema with ajv,
//! `xmllint`), which `.ci/run` installs. A missing tool fails the test, naming how to get it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hotspot_replay::export::{DiffFormat, ExportOptions, Format, Scan, Selection, Slice};

/// `format`'s output of `slice` as text (every format but pprof is UTF-8).
pub fn out(format: Format, slice: &Slice, top: Option<usize>) -> String {
    let bytes = format
        .render(
            slice,
            &ExportOptions {
                top,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{format:?}: {e}"))
}

/// `format`'s comparison of `base` and `new` as text.
pub fn diff_out(format: DiffFormat, base: &Slice, new: &Slice, top: Option<usize>) -> String {
    let bytes = format
        .render(
            base,
            new,
            &ExportOptions {
                top,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{format:?}: {e}"));
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{format:?}: {e}"))
}

/// `fixtures/captures/NAME`.
pub fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(name)
}

/// Scans a committed capture with `selection`'s time window.
pub fn scan(name: &str, selection: &Selection, keep_order: bool) -> Scan {
    Scan::open(
        &capture(name),
        selection.scan_options(keep_order),
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Scans a committed capture as `info` does: whole, with the record sizes measured.
pub fn scan_info(name: &str) -> Scan {
    let options = hotspot_replay::export::ScanOptions {
        measure_sizes: true,
        ..Default::default()
    };
    Scan::open(&capture(name), options, &mut |_, _| {}).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Scans and slices with `selection`; the closure gets the slice.
pub fn with_slice<T>(
    name: &str,
    selection: &Selection,
    keep_order: bool,
    f: impl FnOnce(&Slice) -> T,
) -> T {
    let scan = scan(name, selection, keep_order);
    let slice = Slice::new(&scan, selection).unwrap_or_else(|e| panic!("{name}: {e}"));
    f(&slice)
}

/// A fresh scratch directory for one test, under cargo's target tmp dir.
pub fn tmp(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("export-tests")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Runs `cmd`, panicking with its output unless it succeeds.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (bash .ci/run installs it)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Where `.ci/run` installs the npm packages (speedscope, ajv).
pub fn npm_modules() -> PathBuf {
    let dir = std::env::var_os("HOTSPOT_NPM_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/npm-tools"))
        .join("node_modules");
    assert!(
        dir.join("ajv").is_dir() && dir.join("speedscope").is_dir(),
        "{} lacks ajv and speedscope: run `npm install --prefix target/npm-tools speedscope ajv` \
         (bash .ci/run does)",
        dir.display()
    );
    dir
}

/// Validates the JSON file `data` against the JSON Schema file `schema` with ajv.
pub fn ajv_validate(schema: &Path, data: &Path) {
    const SCRIPT: &str = r#"
const Ajv = require('ajv');
const fs = require('fs');
const [schemaPath, dataPath] = process.argv.slice(1);
const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
if (!validate(JSON.parse(fs.readFileSync(dataPath, 'utf8')))) {
  console.error(JSON.stringify(validate.errors, null, 1));
  process.exit(1);
}
"#;
    run(Command::new("node")
        .env("NODE_PATH", npm_modules())
        .arg("-e")
        .arg(SCRIPT)
        .arg(schema)
        .arg(data));
}

/// The JSON Schema printed in `docs/json-schema.md` after `<!-- schema: NAME -->`.
pub fn documented_schema(name: &str) -> serde_json::Value {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/json-schema.md"),
    )
    .expect("docs/json-schema.md");
    let marker = format!("<!-- schema: {name} -->");
    let at = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker} in docs/json-schema.md"));
    let rest = &doc[at..];
    let start = rest.find("```json\n").expect("fenced json block") + "```json\n".len();
    let end = rest[start..].find("```").expect("closing fence");
    serde_json::from_str(&rest[start..start + end]).unwrap_or_else(|e| panic!("schema {name}: {e}"))
}

/// Compares `actual` with `replay/tests/golden/NAME`; `UPDATE_GOLDEN=1` rewrites it.
pub fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir golden");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (UPDATE_GOLDEN=1 cargo test -p hotspot-replay --test export_json writes it)",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the output at line {}:\n  golden: {:?}\n  actual: {:?}\n(UPDATE_GOLDEN=1 to accept)",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}
