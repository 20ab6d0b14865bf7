//! Puts the git revision into `hotspot --version`: `HOTSPOT_VERSION` is the package
//! version and the short commit, `-dirty` when tracked files differ from it, or
//! "no git revision" when built outside a git checkout (a source tarball, `cargo install`
//! from a copy), so a binary found on a production box says what it was built from.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let revision = revision().unwrap_or_else(|| "no git revision".to_owned());
    println!("cargo:rustc-env=HOTSPOT_VERSION={version} ({revision})");
}

/// `abc1234` or `abc1234-dirty`; None without git or outside a checkout.
fn revision() -> Option<String> {
    // A source copy unpacked inside some other repository is not a checkout of hotspot.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()?
        != Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().ok()?
    {
        return None;
    }
    let hash = git(&["rev-parse", "--short", "HEAD"])?;
    rerun_if_git_changes();
    // Tracked files only, as `git describe --dirty`: a stray untracked file does not make
    // the build differ from the commit, an edited one does.
    // --no-optional-locks: status must not rewrite the index, which would rerun this script.
    let status = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
    ])?;
    let dirty = if status.is_empty() { "" } else { "-dirty" };
    Some(format!("{hash}{dirty}"))
}

/// Cargo reruns this script only for the paths named here. A new commit or checkout moves
/// HEAD or its branch (a worktree keeps HEAD apart from the shared refs, so both are asked
/// of git); `add`/`commit` rewrite the index; an edit of any tracked file changes what
/// `-dirty` says, so each is named (cargo only stats them: ~2300 files cost nothing
/// measurable). A path that does not exist would rerun the script on every build, so only
/// existing ones are named (a deleted tracked file then reruns it until committed, which
/// is right: the tree is dirty).
fn rerun_if_git_changes() {
    let mut paths = Vec::new();
    for name in ["HEAD", "index", "packed-refs"] {
        paths.extend(git(&["rev-parse", "--git-path", name]));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        paths.extend(git(&["rev-parse", "--git-path", &branch]));
    }
    if let Some(files) = git(&["ls-files", "-z"]) {
        // A name with a line break cannot be written as a cargo directive.
        paths.extend(
            files
                .split('\0')
                .filter(|f| !f.is_empty() && !f.contains(['\n', '\r']))
                .map(str::to_owned),
        );
    }
    for path in paths {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// One line of `git ARGS` run in the package directory, trimmed; None if git is missing,
/// fails, or this is not a checkout.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_owned())
}
