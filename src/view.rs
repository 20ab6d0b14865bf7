//! `hotspot view FILE`: the terminal views over a capture, finished or still growing.

use std::io::IsTerminal;

use anyhow::Context;
use hotspot_replay::file::Tail;
use hotspot_tui::links::link::LinkBase;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::{self as tui, Mode, Options, Term};

use crate::cli::{LinkArgs, ViewArgs};
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
    })
}

/// Fails unless stdin and stdout are a terminal (the views need one).
pub fn need_terminal(what: &str) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("{what} needs a terminal; for a text profile use `hotspot report FILE`");
    }
    Ok(())
}

pub fn run(args: ViewArgs) -> anyhow::Result<()> {
    let opts = options(Mode::Replay, &args.links)?;
    need_terminal("hotspot view")?;
    let tail = Tail::open(&args.file)?;
    signals::install();
    crate::hangup::stop_on_hangup();
    let mut term = Term::enter().context("setting up the terminal")?;
    tui::view(&mut term, tail, &args.file, opts, &signals::STOP)?;
    Ok(())
}
