//! Source links: a function's hottest line as a GitHub URL (shown as an OSC 8 hyperlink,
//! copied with OSC 52). URLs are built only from validated or percent-encoded parts, so a
//! name from a capture can never inject terminal controls; a path that cannot be made
//! repository-relative gives no link rather than a wrong one.

use std::fmt;

/// `--repo ORG/REPO --rev REV --strip PREFIX…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkBase {
    repo: String,
    rev: String,
    strip: Vec<String>,
}

/// A rejected `--repo` or `--rev`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("--repo must be ORG/REPO (letters, digits, '-', '_', '.'), not {0:?}")]
    Repo(String),
    #[error(
        "--rev must be a branch, tag or commit (letters, digits, '-', '_', '.', '/'), not {0:?}"
    )]
    Rev(String),
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

impl LinkBase {
    /// Validates the parts; `rev` defaults to `HEAD`.
    pub fn new(repo: &str, rev: Option<&str>, strip: Vec<String>) -> Result<LinkBase, LinkError> {
        let ok_repo = matches!(repo.split('/').collect::<Vec<_>>()[..],
            [org, name] if !org.is_empty() && !name.is_empty()
                && org.chars().all(name_char) && name.chars().all(name_char)
                && name != "." && name != "..");
        if !ok_repo {
            return Err(LinkError::Repo(repo.to_string()));
        }
        let rev = rev.unwrap_or("HEAD");
        let ok_rev = !rev.is_empty()
            && rev.chars().all(|c| name_char(c) || c == '/')
            && !rev.split('/').any(|p| p.is_empty() || p == "..");
        if !ok_rev {
            return Err(LinkError::Rev(rev.to_string()));
        }
        Ok(LinkBase {
            repo: repo.to_string(),
            rev: rev.to_string(),
            strip,
        })
    }

    /// The URL of `file:line`, if `file` is (or after stripping a prefix becomes) a clean
    /// relative path.
    pub fn url(&self, file: &str, line: u32) -> Option<String> {
        let mut rel = None;
        for p in &self.strip {
            let p = p.trim_end_matches('/');
            if let Some(rest) = file.strip_prefix(p).and_then(|r| r.strip_prefix('/')) {
                rel = Some(rest);
                break;
            }
        }
        let rel = match rel {
            Some(r) => r,
            None if !file.starts_with('/') => file,
            None => return None,
        };
        let parts: Vec<&str> = rel.split('/').collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        {
            return None;
        }
        let path: Vec<String> = parts.iter().map(|p| percent(p)).collect();
        let anchor = if line > 0 {
            format!("#L{line}")
        } else {
            String::new()
        };
        Some(format!(
            "https://github.com/{}/blob/{}/{}{anchor}",
            self.repo,
            self.rev,
            path.join("/")
        ))
    }
}

/// Percent-encodes everything but unreserved URL characters.
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `text` wrapped in an OSC 8 hyperlink to `url` (which must come from [`LinkBase::url`]).
#[derive(Debug)]
pub struct Osc8<'a> {
    pub url: &'a str,
    pub text: &'a str,
}

impl fmt::Display for Osc8<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\x1b]8;;{}\x1b\\{}\x1b]8;;\x1b\\", self.url, self.text)
    }
}

/// The OSC 52 sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LinkBase {
        LinkBase::new("acme/widget", Some("v1.2"), vec!["/build/widget/".into()]).expect("valid")
    }

    #[test]
    fn relative_and_stripped_paths_link_to_the_line() {
        let b = base();
        assert_eq!(
            b.url("src/main.rs", 42).as_deref(),
            Some("https://github.com/acme/widget/blob/v1.2/src/main.rs#L42")
        );
        assert_eq!(
            b.url("/build/widget/lib/a b.c", 7).as_deref(),
            Some("https://github.com/acme/widget/blob/v1.2/lib/a%20b.c#L7")
        );
    }

    #[test]
    fn paths_outside_the_repository_give_no_link() {
        let b = base();
        assert_eq!(b.url("/usr/include/stdio.h", 1), None);
        assert_eq!(b.url("/build/widget/../etc/passwd", 1), None);
        assert_eq!(b.url("src//x.rs", 1), None);
    }

    #[test]
    fn control_characters_cannot_reach_the_url() {
        let url = base().url("src/\x1b]8;;evil\x07.rs", 1).expect("link");
        assert!(!url.chars().any(|c| c.is_control()), "{url}");
    }

    #[test]
    fn bad_repo_or_rev_is_refused() {
        assert!(LinkBase::new("acme", None, vec![]).is_err());
        assert!(LinkBase::new("acme/w\x1b", None, vec![]).is_err());
        assert!(LinkBase::new("acme/w", Some("../x"), vec![]).is_err());
        assert!(LinkBase::new("acme/w", None, vec![]).is_ok());
    }

    #[test]
    fn clipboard_sequence_is_base64() {
        assert_eq!(osc52("hi!"), "\x1b]52;c;aGkh\x07");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
    }
}
