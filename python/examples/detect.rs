//! Prints what [`hotspot_python::detect`] makes of each ELF file named on the command line.
fn main() {
    for path in std::env::args().skip(1) {
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("{path}: {e}");
                continue;
            }
        };
        let started = std::time::Instant::now();
        let verdict = hotspot_python::detect(&data, Some(&path));
        let took = started.elapsed();
        println!("{path}: detection took {took:.2?} ({} bytes)", data.len());
        match verdict {
            Ok(hotspot_python::Detection::Supported(i)) => println!(
                "{path}: CPython {} ({:?}), offsets from {:?}, key {:?} at _PyRuntime+{}, eval loop {:x?} cold {:x?} ({:?})",
                i.version,
                i.version_from,
                i.offsets_from,
                i.key_check,
                i.layout.runtime_tss,
                i.eval_loop.hot,
                i.eval_loop.cold,
                i.eval_loop.cold_source
            ),
            Ok(d) => println!("{path}: {d:?}"),
            Err(e) => println!("{path}: {e}"),
        }
    }
}
