//! Opening the capture file safely: never through an unexpected symlink, never over a
//! file that is not a capture, always mode 0600 (captures hold command lines and paths).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::RecorderError;

/// Opens `path` for a new capture: creates it, or replaces an existing capture.
pub fn open_capture(
    path: &Path,
    is_capture: impl Fn(&[u8]) -> bool,
) -> Result<File, RecorderError> {
    let io = |source| RecorderError::Io {
        path: path.to_path_buf(),
        source,
    };
    let flags = libc::O_NOFOLLOW | libc::O_CLOEXEC;
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    let mut f = match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(RecorderError::Symlink(path.to_path_buf()));
        }
        Err(e) => return Err(io(e)),
    };
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(RecorderError::NotACapture(path.to_path_buf()));
    }
    let mut head = [0u8; 16];
    let n = read_up_to(&mut f, &mut head).map_err(io)?;
    if !is_capture(&head[..n]) {
        return Err(RecorderError::NotACapture(path.to_path_buf()));
    }
    f.set_len(0).map_err(io)?;
    f.seek(SeekFrom::Start(0)).map_err(io)?;
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    Ok(f)
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn magic(b: &[u8]) -> bool {
        b.starts_with(b"CAPTURE!")
    }

    #[test]
    fn creates_new_files_0600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("x.hsp");
        open_capture(&p, magic).expect("opens");
        let mode = std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn replaces_captures_but_not_other_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cap = dir.path().join("old.hsp");
        std::fs::write(&cap, b"CAPTURE!and more").expect("write");
        open_capture(&cap, magic).expect("a capture may be replaced");
        assert_eq!(std::fs::metadata(&cap).expect("meta").len(), 0);

        let other = dir.path().join("notes.txt");
        std::fs::write(&other, b"precious").expect("write");
        let err = open_capture(&other, magic).expect_err("must refuse");
        assert!(matches!(err, RecorderError::NotACapture(_)));
        assert_eq!(std::fs::read(&other).expect("read"), b"precious");
    }

    #[test]
    fn refuses_symlinks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target.hsp");
        std::fs::write(&target, b"CAPTURE!").expect("write");
        let link = dir.path().join("link.hsp");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let err = open_capture(&link, magic).expect_err("must refuse");
        assert!(matches!(err, RecorderError::Symlink(_)), "{err}");
    }
}
