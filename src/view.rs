//! `hotspot view FILE`: the terminal views over a capture, finished or still growing.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;
use hotspot_replay::export::diff::DiffOptions;
use hotspot_replay::file::Tail;
use hotspot_tui::diff::Compare;
use hotspot_tui::links::link::LinkBase;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::{self as tui, Mode, Options, Term};

use crate::cli::{CompareArgs, LinkArgs, ViewArgs};
use crate::signals;

/// The views' options from the command line and the environment.
pub fn options(mode: Mode, links: &LinkArgs) -> anyhow::Result<Options> {
    let links = match &links.repo {
        Some(repo) => Some(LinkBase::new(
            repo,
            links.rev.as_deref(),
            links.strip.clone(),
        )?),
        None => None,
    };
    Ok(Options {
        mode,
        palette: Palette::new(ColorMode::detect(|k| std::env::var(k).ok())),
        links,
        symbol_dirs: crate::symbols::symbol_dirs().to_vec(),
        no_interpreter: false,
    })
}

/// Fails unless stdin and stdout are a terminal (the views need one).
pub fn need_terminal(what: &str) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("{what} needs a terminal; for a text profile use `hotspot report FILE`");
    }
    Ok(())
}

/// The base of the views' diff mode: the capture at `path`, opened here (a bad file is a
/// one-line error before the terminal is taken) and read by the views as they run.
pub fn base(path: &Path, args: &CompareArgs) -> anyhow::Result<Compare> {
    let tail = Tail::open(path)?;
    Ok(Compare::reading(
        tail,
        path,
        DiffOptions {
            scale: args.scale,
            alpha: args.alpha,
        },
    ))
}

pub fn run(args: ViewArgs) -> anyhow::Result<()> {
    let opts = Options {
        no_interpreter: args.no_interpreter,
        ..options(Mode::Replay, &args.links)?
    };
    need_terminal("hotspot view")?;
    // `view BASE NEW`: the second file is the one shown (and tailed), the first its base.
    let (path, compare) = match &args.new {
        Some(new) => (new, Some(base(&args.file, &args.compare)?)),
        None => (&args.file, None),
    };
    let tail = Tail::open(path)?;
    signals::install();
    crate::hangup::stop_on_hangup();
    let mut term = Term::enter().context("setting up the terminal")?;
    tui::view_against(&mut term, tail, path, opts, compare, &signals::STOP)?;
    Ok(())
}
