//! Running the binary on a hostile capture and checking what it did: under CPU, wall-time
//! and address-space limits, never a panic or a signal, clean output or one clean error
//! line naming the file, and sample counts that agree across commands.

use super::*;

use hotspot_replay::export::{DiffFormat, Format};

/// CPU time a command may take. CPU rather than wall time: on a loaded machine (CI, or
/// these tests' own parallel runs) a process can wait for a CPU far longer than it runs.
pub(crate) const CPU_LIMIT: Duration = Duration::from_secs(5);
/// Wall time after which a command is killed as hung: one that sleeps forever uses no
/// CPU, so this catches what the CPU limit cannot.
pub(crate) const WALL_LIMIT: Duration = Duration::from_secs(30);
pub(crate) const MEMORY: u64 = 512 << 20;

/// What one run of the binary did.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) status: std::process::ExitStatus,
    /// The output, or its first `keep` bytes (see [`run_keeping`]).
    pub(crate) stdout: Vec<u8>,
    /// Bytes and newlines written to stdout in all.
    pub(crate) stdout_len: u64,
    pub(crate) stdout_lines: u64,
    /// Its last bytes (up to 64).
    pub(crate) stdout_tail: Vec<u8>,
    pub(crate) stderr: String,
    /// User and system CPU time.
    pub(crate) cpu: Duration,
}

/// Runs `hotspot ARGS` with the address-space limit; fails the test on a hang.
pub(crate) fn run(args: &[OsString]) -> Run {
    run_keeping(args, usize::MAX)
}

/// [`run`], keeping only the first `keep` bytes of stdout (all of it is counted).
// The child is reaped by `wait4` (which std does not know of), for its CPU time.
#[allow(clippy::zombie_processes)]
pub(crate) fn run_keeping(args: &[OsString], keep: usize) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hotspot"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("hotspot starts");
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let (mut v, mut len, mut lines, mut tail) = (Vec::new(), 0u64, 0u64, Vec::new());
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            let got = &buf[..n];
            len += n as u64;
            lines += got.iter().filter(|&&b| b == b'\n').count() as u64;
            v.extend_from_slice(&got[..n.min(keep.saturating_sub(v.len()))]);
            tail.extend_from_slice(&got[n.saturating_sub(64)..]);
            tail.drain(..tail.len().saturating_sub(64));
        }
        (v, len, lines, tail)
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    // Reaped here with wait4, for its CPU time; `child` is not waited on again.
    let (status, cpu) = loop {
        let mut status = 0;
        // SAFETY: a plain syscall on our own child, writing into locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
        if r == pid {
            let t = |tv: libc::timeval| {
                Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
            };
            break (
                std::process::ExitStatus::from_raw(status),
                t(usage.ru_utime) + t(usage.ru_stime),
            );
        }
        if start.elapsed() > WALL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hotspot {args:?} still running after {WALL_LIMIT:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (stdout, stdout_len, stdout_lines, stdout_tail) = reader.join().expect("stdout reader");
    Run {
        status,
        stdout,
        stdout_len,
        stdout_lines,
        stdout_tail,
        stderr: String::from_utf8_lossy(&err_reader.join().expect("stderr reader")).into_owned(),
        cpu,
    }
}

/// Characters that must never reach a terminal from a capture (newline aside).
pub(crate) fn unsafe_char(c: char) -> bool {
    let u = c as u32;
    (u < 0x20 && c != '\n')
        || u == 0x7f
        || (0x80..0xa0).contains(&u)
        || matches!(
            u,
            0x061c
                | 0x200b..=0x200f
                | 0x2028..=0x202e
                | 0x2060..=0x2069
                | 0xfeff
        )
}

pub(crate) fn assert_clean(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| unsafe_char(c)) {
        let at = text.find(c).unwrap_or(0);
        let from = text.floor_char_boundary(at.saturating_sub(60));
        let to = text.ceil_char_boundary((at + 60).min(text.len()));
        panic!(
            "{what}: U+{:04X} reaches the output: {:?}",
            c as u32,
            &text[from..to]
        );
    }
}

/// The commands every case goes through: (label, arguments after the file, output kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Out {
    Text,
    Json,
    /// Written to a file (`-o`), binary.
    File,
}

/// One command: its label, its arguments after the file, its output kind.
pub(crate) type Cmd = (&'static str, &'static [&'static str], Out);

/// The commands every case goes through: `info` both ways, `report` in each of replay's
/// formats and `diff` in each of its, read from the one list of them
/// (`hotspot_replay::export::format`), so a new format meets every hostile case; the
/// matches below make it say what its output is.
pub(crate) fn commands() -> &'static [Cmd] {
    static ALL: OnceLock<Vec<Cmd>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<Cmd> = vec![
            ("info", &["info"], Out::Text),
            ("info --json", &["info", "--json"], Out::Json),
        ];
        for f in Format::ALL {
            let out = match f {
                Format::Text | Format::Folded | Format::Svg => Out::Text,
                Format::Json | Format::Speedscope => Out::Json,
                Format::Pprof => Out::File,
            };
            all.push(with_format("report", f.name(), f == Format::Text, out));
        }
        for f in DiffFormat::ALL {
            let out = match f {
                DiffFormat::Text | DiffFormat::Folded | DiffFormat::Svg => Out::Text,
                DiffFormat::Json => Out::Json,
            };
            all.push(with_format("diff", f.name(), f == DiffFormat::Text, out));
        }
        all
    })
}

/// `cmd --format name`, labelled `cmd name`; the default format is `cmd` alone.
fn with_format(cmd: &'static str, name: &'static str, default: bool, out: Out) -> Cmd {
    if default {
        return (cmd, Box::leak(Box::new([cmd])), out);
    }
    let label: &'static str = Box::leak(format!("{cmd} {name}").into_boxed_str());
    (label, Box::leak(Box::new([cmd, "--format", name])), out)
}

/// Where the cases are written, once per test process.
pub(crate) fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hostile-e2e-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    })
}

pub(crate) fn write_case(case: &Case) -> PathBuf {
    let path = dir().join(format!("{}.hsp", case.name));
    std::fs::write(&path, &case.bytes).expect("write case");
    path
}

/// Runs one command on `path` and checks it; returns the sample count a JSON output
/// reports, if it succeeded and reports one.
pub(crate) fn check(
    case: &str,
    expect: &Expect,
    path: &Path,
    cmd: (&str, &[&str], Out),
) -> Option<u64> {
    let (label, args, out) = cmd;
    let mut argv: Vec<OsString> = args.iter().map(OsString::from).collect();
    let first_arg = argv.len();
    argv.insert(first_arg.min(1), path.into());
    if args[0] == "diff" {
        argv.insert(2, path.into());
    }
    let out_file = dir().join(format!("{case}-{}.out", label.replace(' ', "_")));
    if out == Out::File {
        let _ = std::fs::remove_file(&out_file);
        argv.push("-o".into());
        argv.push(out_file.clone().into());
    }
    let r = run(&argv);
    // Debug-quoted: a case may be named to drive the terminal.
    let what = format!("{case:?}: hotspot {label}");
    assert!(
        r.status.signal().is_none(),
        "{what}: killed by signal {:?} (stderr: {})",
        r.status.signal(),
        r.stderr
    );
    assert_ne!(r.status.code(), Some(101), "{what}: panicked: {}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
    assert!(
        !r.stderr.contains("memory allocation"),
        "{what}: {}",
        r.stderr
    );
    assert_clean(&format!("{what} stderr"), &r.stderr);
    assert!(r.cpu < CPU_LIMIT, "{what}: took {:?} of CPU", r.cpu);
    if !r.status.success() {
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "{what}: stderr is not one line: {:?}",
            r.stderr
        );
        let line = lines[0];
        assert!(line.starts_with("hotspot: "), "{what}: {line}");
        // As the binary shows it: escaped.
        let name = hotspot_replay::sanitize::display(
            &path.file_name().unwrap_or_default().to_string_lossy(),
        );
        assert!(
            line.contains(&name),
            "{what:?}: the error does not name the file: {line}"
        );
        match expect {
            Expect::Error(text) => {
                assert!(line.contains(text), "{what}: expected '{text}' in: {line}");
            }
            Expect::Any => {}
            // An empty capture opens, but has nothing to draw a flame graph of.
            Expect::Samples(0) | Expect::Opens
                if (label == "report svg" || label == "diff svg")
                    && line.contains("no samples") => {}
            _ => panic!("{what}: expected to open, failed: {line}"),
        }
        return None;
    }
    if let Expect::Error(text) = expect {
        panic!("{what}: expected an error with '{text}', succeeded");
    }
    assert!(
        r.stderr.is_empty() || label.starts_with("report") || label.starts_with("diff"),
        "{what}: stderr: {}",
        r.stderr
    );
    match out {
        Out::Text => {
            let text = String::from_utf8(r.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_clean(&what, &text);
            None
        }
        Out::Json => {
            let text = String::from_utf8(r.stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_clean(&what, &text);
            let v: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: bad JSON: {e}"));
            v.pointer("/counts/samples")
                .or_else(|| v.pointer("/totals/capture_samples"))
                .and_then(|n| n.as_u64())
        }
        Out::File => {
            let bytes = std::fs::read(&out_file).unwrap_or_else(|e| panic!("{what}: {e}"));
            let _ = std::fs::remove_file(&out_file);
            assert!(bytes.starts_with(&[0x1f, 0x8b]), "{what}: not gzip");
            None
        }
    }
}

/// Every command on one case; checks the sample counts agree with each other and with
/// the case's expectation.
pub(crate) fn check_case(case: &Case, commands: &[(&str, &[&str], Out)]) {
    let path = write_case(case);
    let mut counts = Vec::new();
    for &cmd in commands {
        if let Some(n) = check(&case.name, &case.expect, &path, cmd) {
            counts.push((cmd.0, n));
        }
    }
    if let Expect::Samples(n) = case.expect {
        assert!(
            !counts.is_empty(),
            "{}: no sample count reported",
            case.name
        );
        for (label, got) in &counts {
            assert_eq!(*got, n, "{}: {label} reports {got} samples", case.name);
        }
    }
    let _ = std::fs::remove_file(&path);
}

pub(crate) fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(hostile::cases)
}

pub(crate) fn by_name(name: &str) -> &'static Case {
    cases()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}
