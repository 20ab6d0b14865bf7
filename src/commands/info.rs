//! `hotspot info`: what a capture holds, as text or the `hotspot-info` JSON document.

use hotspot_replay::export::ScanOptions;

use crate::{cli, output};

pub fn run(args: cli::InfoArgs) -> anyhow::Result<()> {
    let scan = super::scan(
        &args.file,
        ScanOptions {
            measure_sizes: true,
            ..ScanOptions::default()
        },
    )?;
    let out = if args.json {
        hotspot_replay::info::scan_json(&scan)
    } else {
        hotspot_replay::info::scan_text(&scan)
    };
    output::write_to(None, false, |w| Ok(w.write_all(out.as_bytes())?))
}
