//! Feeds arbitrary bytes to the decoders behind the checksums: the record framing of a
//! decompressed payload, and the sample columns. The `reader` target rarely gets past a
//! payload checksum, so this one exercises what a crafted (checksum-correct) file reaches.
#![no_main]

use hotspot_format::{codec, columns};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = codec::decode_records(data);
    if let Ok(samples) = columns::decode_batch(data, u64::MAX) {
        // Whatever decodes re-encodes to something that decodes to the same samples.
        let mut again = Vec::new();
        columns::encode_batch(&samples, &mut again);
        assert_eq!(columns::decode_batch(&again, u64::MAX).ok(), Some(samples));
    }
});
