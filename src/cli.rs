//! Command-line arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use hotspot_replay::clock::Clock;
use hotspot_replay::export::diff::Scale;
use hotspot_replay::export::diff::gate::Rule;
use hotspot_replay::export::{DiffFormat, Format, Selection};
use hotspot_replay::metric::Metric;
use hotspot_replay::time::{At, TimeSpec};

#[derive(Debug, Parser)]
#[command(
    name = "hotspot",
    // The package version and git revision (build.rs), so a copied binary says what it is.
    version = env!("HOTSPOT_VERSION"),
    about = "A sampling CPU profiler for Linux, built on eBPF"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Name frames again from ELF or debug files in DIR (matched by build-id; repeatable).
    #[arg(long = "symbols", value_name = "DIR", global = true)]
    pub symbols: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record a capture of running processes, or of a command: `record -p PID[,PID…] -o FILE` (or PIDs as arguments) or `record -o FILE -- CMD ARGS…`.
    Record(RecordArgs),
    /// Print a capture's session header, counts, symbol coverage, whether it ended cleanly,
    /// and what its bytes hold.
    Info(InfoArgs),
    /// Print a capture's profile: top functions as text, or JSON, folded stacks, an SVG
    /// flame graph, pprof or speedscope.
    Report(ReportArgs),
    /// Compare two captures: each function's change in self and total share.
    Diff(DiffArgs),
    /// Profile the built-in demo workload: the live view in a terminal, else record a few seconds and print what was captured.
    Demo(DemoArgs),
    /// Mark a point in time in a running flight recorder's history: `mark DIR "deploy 4.2"` (`info` and `info --json` of the segment list it).
    Mark(MarkArgs),
    /// Copy a capture without what names the machine and its people, to attach it to a ticket: `scrub IN -o OUT` drops command-line arguments beyond the program name, the host name and user names in paths; every profile stays the same.
    Scrub(ScrubArgs),
    /// Cut a window of a flight recorder's history into one self-contained capture: `snapshot DIR --last 10m -o incident.hsp` (or `--from/--to`, as the filters take them; `--scrub` as `scrub` does).
    Snapshot(SnapshotArgs),
    /// Browse a capture in the terminal (flat, callers/callees, flame, stream, threads, timeline); tails it while it grows.
    View(ViewArgs),
    /// Profile live in the terminal: processes (`live -p PID[,PID…]` or `live PID`), a command (`live -- CMD ARGS…`), or pick one from a table (`live`).
    Live(LiveArgs),
    /// Run the built-in demo workload (what `demo` records).
    #[command(hide = true, name = "demo-workload")]
    DemoWorkload {
        #[arg(default_value_t = 5.0)]
        seconds: f64,
    },
}

/// How user stacks are unwound (perf's `--call-graph` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CallGraph {
    /// Call-frame information (.eh_frame, .debug_frame) over a copy of the user stack:
    /// complete stacks in code without frame pointers (distribution packages, release
    /// builds). The default; asked for explicitly, a kernel that cannot copy stacks is an
    /// error instead of a fallback to `fp`.
    Dwarf,
    /// The kernel's frame-pointer walk: cheaper per sample, but code built without frame
    /// pointers loses its callers.
    Fp,
}

/// How stacks are taken; shared by `record`, `live` and `demo`.
#[derive(Debug, Clone, Copy, Args)]
pub struct UnwindArgs {
    /// How user stacks are unwound: `dwarf` (call-frame information over a copied stack,
    /// complete without frame pointers; the default, which needs Linux 5.17) or `fp`
    /// (frame pointers only). Without this option a kernel that cannot copy stacks gets
    /// `fp`, said in one line and in `hotspot info`; `--call-graph dwarf` makes that an
    /// error.
    #[arg(long = "call-graph", value_enum, value_name = "METHOD")]
    pub call_graph: Option<CallGraph>,
    /// With `--call-graph dwarf`: most bytes of each sample's user stack copied and
    /// unwound (256 to 65536; default 65536). A deeper stack ends in a `[truncated: …]`
    /// frame, or goes on by frame pointers where the rest of it has them.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(256..=65536))]
    pub stack_cap: Option<u32>,
    /// Most Python frames taken per sample of a CPython process (1 to 1024); a deeper
    /// Python stack ends in a `[python: more frames than --python-frames]` frame.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub python_frames: u32,
}

/// Bytes of user stack copied per sample when `--stack-cap` is not given.
const DEFAULT_STACK_CAP: u32 = 65536;

impl UnwindArgs {
    /// Bytes of stack the kernel copies per sample: 0 means frame pointers only.
    pub fn stack_cap(&self) -> u32 {
        match self.call_graph {
            Some(CallGraph::Dwarf) | None => self.stack_cap.unwrap_or(DEFAULT_STACK_CAP),
            Some(CallGraph::Fp) => 0,
        }
    }

    /// Whether frame pointers may replace a stack copy the kernel refuses: only when
    /// neither `--call-graph` nor `--stack-cap` asked for the copy.
    pub fn stack_fallback(&self) -> bool {
        self.call_graph.is_none() && self.stack_cap.is_none()
    }
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Processes to record (all their threads, including threads started later).
    pub pids: Vec<u32>,
    /// Process to record, like the PIDs above (repeatable, and a comma-separated list
    /// counts too, as with perf: `-p 12,34`).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pid: Vec<String>,
    /// Capture file to write (an existing file is replaced only if it is a capture).
    #[arg(short, long, default_value = "hotspot.hsp")]
    pub output: PathBuf,
    /// Sampling frequency in Hz (per CPU).
    #[arg(short = 'F', long = "freq", default_value_t = 499, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub freq: u32,
    /// Stop after this long: seconds (`3`) or with a unit (`500ms`, `10s`, `2m`).
    #[arg(short, long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Record every process on the machine.
    #[arg(short, long, conflicts_with_all = ["pids", "pid"])]
    pub all: bool,
    /// Do not follow processes forked by the targets.
    #[arg(long)]
    pub no_children: bool,
    /// Also record off-CPU time: each traced thread's exact time on the CPU and off it
    /// (sleeping, uninterruptible, waiting for a CPU), and the stacks it blocked in,
    /// sampled in the same periods as CPU samples (1/freq). Needs Linux 6.16, or 5.18
    /// with kprobes (CONFIG_KPROBES), and CONFIG_SCHED_INFO (docs/kernel-support.md);
    /// a kernel that cannot is an error, never a recording without it.
    #[arg(long)]
    pub off_cpu: bool,
    /// Flight recorder: record into the directory given by `-o` as a history of segments
    /// (one capture per `--segment`), ending segments older than this (e.g. `30m`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub keep: Option<Duration>,
    /// Flight recorder: keep the directory's segments under this size (`500M`, `2G`);
    /// with `--keep` too, a segment goes when either budget says so.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Flight recorder: the time each segment covers.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub segment: Duration,
    /// Take marks dropped into DIR (`hotspot mark DIR TEXT`) at every block (a flight
    /// recorder takes those of its own directory).
    #[arg(long, value_name = "DIR", hide = true)]
    pub marks_from: Option<PathBuf>,
    /// Flight recorder: print one line per finished segment on stderr.
    #[arg(long)]
    pub log_segments: bool,
    /// Write the capture scrubbed, as `hotspot scrub` would leave it: no command-line
    /// arguments beyond the program name, no host name, no user names in paths.
    #[arg(long)]
    pub scrub: bool,
    /// Leave the command from `-- CMD` running when the recording ends first (by
    /// `--duration` or Ctrl-C); by default it is ended (SIGTERM, SIGKILL 2 s later).
    #[arg(long)]
    pub keep_running: bool,
    #[command(flatten)]
    pub unwind: UnwindArgs,
    /// Command to start and record, from its first instruction.
    #[arg(last = true)]
    pub command: Vec<String>,
    /// Testing: append the capture's sample count to FILE before (`write N`) and after
    /// (`done N`) every block write, and the kernel's lost counters at the end.
    #[arg(long, value_name = "FILE", hide = true)]
    pub flush_log: Option<PathBuf>,
    /// Testing: write a block this often instead of once a second.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, hide = true)]
    pub flush_interval: Option<Duration>,
    /// Size of the kernel's sample buffer in bytes (a power of two; default: sized for the
    /// rate and a typical 2 KiB stack, 2 MiB on 2 CPUs). Programs with deep stacks at high
    /// rates need more (rustc at 4999 Hz: 32 MiB to lose none); it costs up to twice
    /// its size in memory.
    #[arg(long, value_name = "BYTES")]
    pub ring_bytes: Option<u32>,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The capture file.
    pub file: PathBuf,
    /// Print JSON instead of text (schema in docs/json-schema.md).
    #[arg(long)]
    pub json: bool,
}

/// Which samples count; shared by every output format.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Start of the time range: seconds from the start of the recording (`1.5`, `500ms`),
    /// a UTC time (`08:30:05`, `2026-11-29T08:30:05Z`), or `mark:NAME` (the capture's
    /// first mark with that text).
    #[arg(long, value_parser = parse_at)]
    pub from: Option<At>,
    /// End of the time range (same forms as --from).
    #[arg(long, value_parser = parse_at)]
    pub to: Option<At>,
    /// Only this thread id (repeatable).
    #[arg(long)]
    pub tid: Vec<u32>,
    /// Only threads with this name (exact; repeatable).
    #[arg(long = "thread", value_name = "NAME")]
    pub thread: Vec<String>,
    /// Only threads of this process (repeatable).
    #[arg(long)]
    pub pid: Vec<u32>,
    /// Leave kernel frames out (a sample in the kernel counts for its user caller).
    #[arg(long)]
    pub no_kernel: bool,
    /// Leave the Python interpreter's own native frames (the eval loop and its helpers in
    /// libpython or python3.x) out of stacks that hold Python frames: Python frames with
    /// the native frames of C extensions, libraries and the kernel, as `py-spy --native`
    /// shows them. Their samples count for the Python frame that called them.
    #[arg(long)]
    pub no_interpreter: bool,
    /// What to weigh: `cpu` (time on the CPU), `off-cpu` (time blocked, split by state S,
    /// D, R) or `wall` (both); counts are in periods of 1/freq. off-cpu and wall need a
    /// capture recorded with --off-cpu.
    #[arg(long, value_name = "METRIC", default_value = "cpu", value_parser = parse_metric)]
    pub metric: Metric,
}

impl FilterArgs {
    /// The selection for the capture at `path`: a `mark:NAME` is placed at that
    /// capture's mark (read from it first; times need no reading).
    pub fn selection(&self, path: &std::path::Path) -> anyhow::Result<Selection> {
        let (from, to) = place(self.from.as_ref(), self.to.as_ref(), || {
            let c = hotspot_replay::Capture::open(path)?;
            let clock = hotspot_replay::clock::Clock::of(
                c.session.as_ref(),
                c.samples.first().map(|s| s.time_ns),
            );
            Ok((clock, c.marks))
        })?;
        Ok(Selection {
            from,
            to,
            tids: self.tid.clone(),
            threads: self.thread.clone(),
            pids: self.pid.clone(),
            no_kernel: self.no_kernel,
            no_interpreter: self.no_interpreter,
            metric: self.metric,
        })
    }
}

/// `--from`/`--to` as times: marks placed with the clock and marks `read` gives (called
/// only when one of them names a mark).
pub fn place(
    from: Option<&At>,
    to: Option<&At>,
    read: impl FnOnce() -> anyhow::Result<(Option<Clock>, Vec<hotspot_format::Mark>)>,
) -> anyhow::Result<(Option<TimeSpec>, Option<TimeSpec>)> {
    if !from.is_some_and(At::is_mark) && !to.is_some_and(At::is_mark) {
        let time = |a: Option<&At>| match a {
            Some(At::Time(t)) => Some(*t),
            _ => None,
        };
        return Ok((time(from), time(to)));
    }
    let (clock, marks) = read()?;
    let at = |a: Option<&At>| a.map(|a| a.place(clock.as_ref(), &marks)).transpose();
    Ok((at(from)?, at(to)?))
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The capture file.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, default_value_t = Format::Text, value_parser = report_formats())]
    pub format: Format,
    /// Write to this file instead of stdout (needed for pprof on a terminal).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Functions listed by the text and JSON reports [text default: 30; JSON: all].
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub filter: FilterArgs,
}

#[derive(Debug, Args)]
pub struct MarkArgs {
    /// The flight recorder's directory (`record --keep … -o DIR`).
    pub dir: PathBuf,
    /// What happened (at most 1024 bytes are kept).
    pub text: String,
}

#[derive(Debug, Args)]
pub struct ScrubArgs {
    /// The capture to scrub.
    pub input: PathBuf,
    /// The scrubbed copy (must not exist yet).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    #[command(flatten)]
    pub keep: KeepArgs,
}

/// What a scrub keeps.
#[derive(Debug, Args)]
pub struct KeepArgs {
    /// Keep command-line arguments.
    #[arg(long)]
    pub keep_arguments: bool,
    /// Keep the host name.
    #[arg(long)]
    pub keep_host: bool,
    /// Keep user names in paths under /home and /Users.
    #[arg(long)]
    pub keep_user_paths: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("window").required(true).args(["last", "from"])))]
pub struct SnapshotArgs {
    /// The flight recorder's directory (`record --keep … -o DIR`).
    pub dir: PathBuf,
    /// The last DURATION of the history, up to its newest sample (`10m`, `90s`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with_all = ["from", "to"])]
    pub last: Option<Duration>,
    /// Start of the window: seconds from the history's start, a UTC time (`08:30:05`,
    /// `2026-11-29T08:30:05Z`) or `mark:NAME`, as `report --from` takes it.
    #[arg(long, value_parser = parse_at)]
    pub from: Option<At>,
    /// End of the window (same forms as --from); the newest sample if left out.
    #[arg(long, value_parser = parse_at, requires = "from")]
    pub to: Option<At>,
    /// The capture to write (must not exist yet).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Write it scrubbed, as `hotspot scrub` would leave it.
    #[arg(long)]
    pub scrub: bool,
    #[command(flatten)]
    pub keep: KeepArgs,
}

impl KeepArgs {
    /// What the copy loses.
    pub fn what(&self) -> hotspot_format::Scrubbed {
        hotspot_format::Scrubbed {
            arguments: !self.keep_arguments,
            host: !self.keep_host,
            user_paths: !self.keep_user_paths,
        }
    }
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The capture before the change.
    pub base: PathBuf,
    /// The capture after the change.
    pub new: PathBuf,
    /// Output format.
    #[arg(long, default_value_t = DiffFormat::Text, value_parser = diff_formats())]
    pub format: DiffFormat,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Functions listed [text default: 30; JSON: all].
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// What to rank and show by: `share` (of each capture's samples) or `rate` (ms per
    /// second of the time each capture covers: a function that kept its share while
    /// everything got slower grew).
    #[arg(long, default_value = "share", value_parser = diff_scales())]
    pub scale: Scale,
    /// The chance, at most, that any unchanged function is marked as changed (`*`):
    /// Holm-corrected over all of the diff's tests (docs/diff.md).
    #[arg(long, default_value_t = hotspot_replay::export::diff::significance::DEFAULT_ALPHA,
          value_parser = parse_alpha, value_name = "P")]
    pub alpha: f64,
    /// Exit with status 3, one line per function on stderr, when a function grew by more
    /// than this and beyond noise: `self>2pt`, `total>5pt` (share points), `self>20%`,
    /// `total>20%` (time per second). Repeatable.
    #[arg(long = "fail-if", value_name = "RULE")]
    pub fail_if: Vec<Rule>,
    /// Filters, applied to both captures.
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// `report --format`'s choices, each with its line of help: the exporters' one list.
fn report_formats() -> impl TypedValueParser<Value = Format> {
    choices(Format::ALL.map(|f| (f.name(), f.about()))).try_map(|s| s.parse::<Format>())
}

/// `diff --format`'s choices, the same way.
fn diff_formats() -> impl TypedValueParser<Value = DiffFormat> {
    choices(DiffFormat::ALL.map(|f| (f.name(), f.about()))).try_map(|s| s.parse::<DiffFormat>())
}

/// `diff --scale`'s choices.
fn diff_scales() -> impl TypedValueParser<Value = Scale> {
    PossibleValuesParser::new(Scale::ALL.map(|s| PossibleValue::new(s.name()))).map(|s| {
        if s == Scale::Rate.name() {
            Scale::Rate
        } else {
            Scale::Share
        }
    })
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("'{s}': a probability between 0 and 1, e.g. 0.05")),
    }
}

fn choices<const N: usize>(formats: [(&'static str, &'static str); N]) -> PossibleValuesParser {
    PossibleValuesParser::new(formats.map(|(name, about)| PossibleValue::new(name).help(about)))
}

fn parse_metric(s: &str) -> Result<Metric, String> {
    s.parse()
        .map_err(|e: hotspot_replay::metric::UnknownMetric| e.to_string())
}

fn parse_at(s: &str) -> Result<At, String> {
    s.parse()
        .map_err(|e: hotspot_replay::time::TimeError| e.to_string())
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long to run the demo workload (default 5 s; in the live view, until you quit).
    #[arg(short, long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Record and print a summary instead of opening the live view (the default when
    /// stdout is not a terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Where to keep the capture.
    #[arg(short, long, default_value = "demo.hsp")]
    pub output: PathBuf,
    /// Sampling frequency in Hz.
    #[arg(short = 'F', long = "freq", default_value_t = 499)]
    pub freq: u32,
    #[command(flatten)]
    pub unwind: UnwindArgs,
}

/// Source links: function names become hyperlinks to their hottest line on GitHub.
#[derive(Debug, Args, Clone)]
pub struct LinkArgs {
    /// GitHub repository the sources come from, as ORG/REPO.
    #[arg(long, value_name = "ORG/REPO")]
    pub repo: Option<String>,
    /// Branch, tag or commit to link to (default HEAD).
    #[arg(long, value_name = "REV", requires = "repo")]
    pub rev: Option<String>,
    /// Prefix to remove from recorded source paths to make them repository-relative (repeatable).
    #[arg(long, value_name = "PREFIX", requires = "repo")]
    pub strip: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The capture file (finished, or still being written); with a second file, the base
    /// of a diff: `view BASE NEW` compares NEW with it.
    pub file: PathBuf,
    /// The capture to compare with the first (finished, or still being written).
    #[arg(value_name = "NEW")]
    pub new: Option<PathBuf>,
    #[command(flatten)]
    pub compare: CompareArgs,
    /// Start with the Python interpreter's own native frames hidden (`P` toggles): see
    /// `hotspot report --no-interpreter`.
    #[arg(long)]
    pub no_interpreter: bool,
    #[command(flatten)]
    pub links: LinkArgs,
}

/// How the views' diff mode compares (`view BASE NEW`, `live --base BASE`): as `hotspot diff`.
#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// In a diff, what changes are shown and ranked by: `share` (of each capture's
    /// samples) or `rate` (ms per second of the time each selection covers); `x` switches.
    #[arg(long, default_value = "share", value_parser = diff_scales())]
    pub scale: Scale,
    /// In a diff, the chance, at most, that any unchanged function is marked as changed
    /// (as `hotspot diff --alpha`).
    #[arg(long, default_value_t = hotspot_replay::export::diff::significance::DEFAULT_ALPHA,
          value_parser = parse_alpha, value_name = "P")]
    pub alpha: f64,
}

#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Process to profile (all its threads); without one, pick one from a table.
    pub pids: Option<u32>,
    /// A process to profile (repeatable; a comma-separated list counts too: `-p 12,34`).
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pub pid: Vec<String>,
    /// Keep the capture in FILE (default: a temporary file removed at exit).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Sampling frequency in Hz (per CPU).
    #[arg(short = 'F', long = "freq", default_value_t = 499, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub freq: u32,
    /// Do not follow processes forked by the target.
    #[arg(long)]
    pub no_children: bool,
    /// Also record off-CPU time (see `hotspot record --off-cpu`).
    #[arg(long)]
    pub off_cpu: bool,
    #[command(flatten)]
    pub unwind: UnwindArgs,
    #[command(flatten)]
    pub links: LinkArgs,
    /// Compare the live profile with this capture (the views' diff mode).
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    #[command(flatten)]
    pub compare: CompareArgs,
    /// Command to start and profile, from its first instruction.
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// The values of `-p/--pid` (clap has split comma lists): process ids, checked here so a
/// bad one is a one-line error naming it.
pub fn parse_pids(values: &[String]) -> anyhow::Result<Vec<u32>> {
    values
        .iter()
        .map(|v| match v.trim().parse::<u32>() {
            Ok(pid) if pid > 0 => Ok(pid),
            _ => Err(anyhow::anyhow!(
                "-p/--pid: '{v}' is not a process id (give positive numbers: -p 1234, -p 12,34)"
            )),
        })
        .collect()
}

/// `3`, `2.5`, `500ms`, `10s`, `2m`, `1h`.
/// A size in bytes: a number with an optional `K`, `M`, `G` (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mult: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("invalid size '{s}': use a number with K, M or G")),
            };
            (&t[..i], mult)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid size '{s}': use a number with K, M or G (e.g. 2G)"))?;
    match n.checked_mul(mult) {
        Some(0) | None => Err(format!(
            "invalid size '{s}': must be positive and under 16 EiB"
        )),
        Some(b) => Ok(b),
    }
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("invalid duration '{s}': expected a number with an optional unit (500ms, 10s, 2m)")
    })?;
    let secs = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(format!(
                "invalid duration unit '{unit}' in '{s}': use ms, s, m or h"
            ));
        }
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!("invalid duration '{s}': must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("500M"), Ok(500 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        for bad in ["", "0", "G", "2T", "x1", "99999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    fn record(args: &[&str]) -> RecordArgs {
        match Cli::try_parse_from(["hotspot", "record"].iter().chain(args)) {
            Ok(Cli {
                command: Command::Record(r),
                ..
            }) => r,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn pids_are_taken_as_perf_takes_them() {
        let r = record(&["-p", "12", "--pid", "34,56", "-p78", "90"]);
        assert_eq!(r.pids, [90]);
        assert_eq!(parse_pids(&r.pid).expect("pids"), [12, 34, 56, 78]);
        let l = match Cli::try_parse_from(["hotspot", "live", "-p", "7,8"]) {
            Ok(Cli {
                command: Command::Live(l),
                ..
            }) => l,
            other => panic!("{other:?}"),
        };
        assert_eq!(parse_pids(&l.pid).expect("pids"), [7, 8]);
        for bad in ["abc", "0", "12,", "1.5", " "] {
            let r = record(&["-p", bad]);
            let e = parse_pids(&r.pid).expect_err(bad).to_string();
            assert!(
                e.starts_with("-p/--pid: '") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
        assert!(
            Cli::try_parse_from(["hotspot", "record", "-a", "-p", "1"]).is_err(),
            "--all and -p conflict"
        );
    }
}
