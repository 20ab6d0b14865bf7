//! Where a headless output goes: `-o FILE` or stdout, written as it is produced (an output
//! can be far larger than the capture, so it is never held whole), a closed pipe ending it
//! quietly.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Runs `produce` with a writer on `output` (`-` or `None`: stdout). A binary output
/// refuses a terminal; an existing capture is never overwritten; a file is created only
/// once there is something to write, so an output that fails before its first byte
/// leaves none behind; a reader that closes the pipe early is not an error.
pub fn write_to(
    output: Option<&Path>,
    binary: bool,
    produce: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if let Some(path) = output.filter(|p| *p != Path::new("-")) {
        refuse_capture(path)?;
        let mut w = BufWriter::with_capacity(
            1 << 16,
            LazyFile {
                path: path.to_path_buf(),
                file: None,
            },
        );
        return produce(&mut w)
            .and_then(|()| Ok(w.flush()?))
            .with_context(|| format!("writing {}", path.display()));
    }
    let stdout = io::stdout();
    if binary && stdout.is_terminal() {
        anyhow::bail!("pprof output is binary: write it to a file with -o OUT, or pipe it");
    }
    let mut w = BufWriter::with_capacity(1 << 16, stdout.lock());
    match produce(&mut w).and_then(|()| Ok(w.flush()?)) {
        Err(e) if broken_pipe(&e) => Ok(()),
        other => other.context("writing to stdout"),
    }
}

/// Through the one opener, so a FIFO or device given as the output is not read from (and
/// a FIFO's open does not wait for a writer): only a regular file can be a capture.
fn refuse_capture(path: &Path) -> anyhow::Result<()> {
    let mut head = [0u8; 8];
    let is_capture = hotspot_replay::file::open(path)
        .is_ok_and(|(mut f, _)| io::Read::read_exact(&mut f, &mut head).is_ok())
        && head == hotspot_format::header::MAGIC;
    if is_capture {
        anyhow::bail!(
            "{} is a capture: refusing to overwrite it with a report",
            path.display()
        );
    }
    Ok(())
}

fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        // An exporter's write error is transparent, so its `io::Error` is not a link of
        // the chain of its own.
        let io = c.downcast_ref::<io::Error>().or_else(|| {
            c.downcast_ref::<hotspot_replay::export::ExportError>()
                .and_then(|e| e.io())
        });
        io.is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// A file created (truncating what was there) at its first write.
struct LazyFile {
    path: PathBuf,
    file: Option<File>,
}

impl Write for LazyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.file.is_none() {
            self.file = Some(File::create(&self.path)?);
        }
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Ok(0),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}
