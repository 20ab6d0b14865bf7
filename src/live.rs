//! `hotspot live` and the terminal side of `hotspot demo`: the recorder writes a capture
//! in a background thread and the views tail that file — the same views and the same
//! reading code as `hotspot view`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use hotspot_replay::file::Tail;
use hotspot_tui::diff::Compare;
use hotspot_tui::{self as tui, Mode, Options, Term};

use hotspot_recorder::live::session::{self, Observer, SessionOptions, Target, Warning};

use crate::cli::{DemoArgs, LinkArgs, LiveArgs};
use crate::hangup;
use crate::process_list::ProcessList;
use crate::progress::print_summary;
use crate::signals;
use crate::view::{need_terminal, options};

/// How often the recorder flushes a block while a view tails the file: the first rows
/// show within a second of opening.
const LIVE_FLUSH: Duration = Duration::from_millis(200);

/// What to record and how.
struct Live {
    /// The session (its output, flush rate and the command's output are set when the
    /// view starts).
    session: SessionOptions,
    /// Where to keep the capture (`None`: a temporary file removed at exit).
    output: Option<PathBuf>,
    opts: Options,
    /// `--base`: the capture the live profile is compared with.
    base: Option<Compare>,
}

pub fn run(args: LiveArgs) -> anyhow::Result<()> {
    // Arguments first: a bad one is the error, whatever the terminal.
    let mut pids: Vec<u32> = args.pids.into_iter().collect();
    pids.extend(crate::cli::parse_pids(&args.pid)?);
    let opts = options(Mode::Live, &args.links)?;
    // The base is read before the terminal is taken: a bad file is a one-line error.
    let base = match &args.base {
        Some(path) => Some(crate::view::base(path, &args.compare)?),
        None => None,
    };
    need_terminal("hotspot live")?;
    let target = if !args.command.is_empty() {
        if !pids.is_empty() {
            anyhow::bail!("give either a PID or a command after --, not both");
        }
        Some(Target::Command(args.command.clone()))
    } else {
        (!pids.is_empty()).then_some(Target::Pids(pids))
    };
    signals::install();
    hangup::stop_on_hangup();
    let mut term = Term::enter().context("setting up the terminal")?;
    let target = match target {
        Some(t) => t,
        None => {
            let mut procs = ProcessList::new(std::path::Path::new("/proc"));
            // Two readings apart, so the first table already shows CPU use.
            procs.read();
            std::thread::sleep(Duration::from_millis(250));
            let mut load = || procs.read();
            match tui::pick(&mut term, opts.palette, &mut load, &signals::STOP)? {
                Some(pid) => Target::Pids(vec![pid]),
                None => return Ok(()),
            }
        }
    };
    let mut session = SessionOptions::new(target, PathBuf::new());
    session.freq = args.freq;
    session.follow_children = !args.no_children;
    session.stack_cap = args.unwind.stack_cap();
    session.python_frames = args.unwind.python_frames;
    session.stack_fallback = args.unwind.stack_fallback();
    session.off_cpu = args.off_cpu;
    let live = Live {
        session,
        output: args.output,
        opts,
        base,
    };
    live_view(term, live)
}

/// `hotspot demo`: the live view on the demo workload in a terminal, else record and
/// print what was captured.
pub fn demo(args: DemoArgs) -> anyhow::Result<()> {
    let tty = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if args.no_tui || !tty {
        return crate::record::demo(args);
    }
    let exe = std::env::current_exe().context("locating the hotspot executable")?;
    // In the view the workload runs until the user quits (it is ended then).
    let secs = args.duration.map_or(1e6, |d| d.as_secs_f64());
    let cmd = vec![
        exe.to_string_lossy().into_owned(),
        "demo-workload".into(),
        format!("{secs}"),
    ];
    let opts = options(
        Mode::Live,
        &LinkArgs {
            repo: None,
            rev: None,
            strip: Vec::new(),
        },
    )?;
    signals::install();
    hangup::stop_on_hangup();
    let term = Term::enter().context("setting up the terminal")?;
    let mut session = SessionOptions::new(Target::Command(cmd), PathBuf::new());
    session.freq = args.freq;
    session.stack_cap = args.unwind.stack_cap();
    session.python_frames = args.unwind.python_frames;
    session.stack_fallback = args.unwind.stack_fallback();
    live_view(
        term,
        Live {
            session,
            output: Some(args.output),
            opts,
            base: None,
        },
    )
}

/// Passes on the pid of the command started once sampling runs, and the features the
/// recording goes without (printed once the view has given the terminal back); hears
/// nothing else.
struct Started {
    started: mpsc::Sender<Option<u32>>,
    notes: mpsc::Sender<String>,
}

impl Observer for Started {
    fn started(&mut self, command: Option<u32>) {
        let _ = self.started.send(command);
    }

    fn warning(&mut self, warning: Warning) {
        if let Warning::FeatureOff(off) = warning {
            let _ = self.notes.send(off.line());
        }
    }
}

/// Removes the temporary capture at exit.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_capture() -> PathBuf {
    std::env::temp_dir().join(format!("hotspot-live-{}.hsp", std::process::id()))
}

/// Records in a background thread and shows the views on the file it writes.
fn live_view(mut term: Term, live: Live) -> anyhow::Result<()> {
    let (path, temp) = match &live.output {
        Some(p) => (p.clone(), None),
        None => {
            let p = temp_capture();
            (p.clone(), Some(RemoveOnDrop(p)))
        }
    };
    // The command's own output goes to a file next to the capture: the view has the terminal.
    let log = path.with_extension("log");
    let (tx, rx) = mpsc::channel();
    let (notes_tx, notes) = mpsc::channel::<String>();
    let Live {
        mut session,
        opts,
        base,
        ..
    } = live;
    session.output = path.clone();
    session.flush_every = LIVE_FLUSH;
    session.command_output = Some(log.clone());
    session.command_line = std::env::args().collect();
    let recorder = std::thread::Builder::new()
        .name("recorder".into())
        .spawn(move || {
            // The view owns the terminal: progress and warnings are not printed.
            let mut observer = Started {
                started: tx,
                notes: notes_tx,
            };
            session::record(&session, &signals::STOP, &mut observer)
        })
        .context("starting the recorder thread")?;
    if rx.recv().is_err() {
        // The recorder failed before sampling started (no BPF, no such process…).
        drop(term);
        notes.try_iter().for_each(|n| eprintln!("hotspot: {n}"));
        return match recorder.join() {
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(_)) => Err(anyhow::anyhow!("the recording ended before it started")),
            Err(panic) => std::panic::resume_unwind(panic),
        };
    }
    let shown = Tail::open(&path)
        .map_err(anyhow::Error::from)
        .and_then(|tail| {
            Ok(tui::view_against(
                &mut term,
                tail,
                &path,
                opts,
                base,
                &signals::STOP,
            )?)
        });
    signals::STOP.store(true, Ordering::SeqCst);
    drop(term);
    notes.try_iter().for_each(|n| eprintln!("hotspot: {n}"));
    let summary = match recorder.join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    shown?;
    let summary = summary?;
    if temp.is_none() {
        print_summary(&summary, &path);
    }
    drop(temp);
    if std::fs::metadata(&log).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(&log);
    } else if log.exists() {
        eprintln!("hotspot: the command's output is in {}", log.display());
    }
    Ok(())
}
