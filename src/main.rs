//! The `hotspot` command line: argument parsing and wiring only.

fn main() -> anyhow::Result<()> {
    Ok(())
}
