//! Terminal safety: a capture whose every name is made to drive a terminal (ESC
//! sequences, C0 and C1 controls, DEL, bidi overrides, zero-width characters, line
//! separators, markup; one name at the format's 64 KiB maximum) is shown escaped in every
//! view and every text format, and OSC 8 links are built from sanitised parts only.
//! Escaped, not dropped: each name still shows, with its controls as visible `\xNN` /
//! `\u{NNNN}` text.

#![allow(clippy::unwrap_used)]

use hotspot_testkit::hostile;
mod read_path;

use std::path::PathBuf;

use hotspot_replay::Capture;
use hotspot_replay::export::{
    DiffFormat, ExportOptions, Format, Scan, ScanOptions, Selection, Slice, pprof,
};
use hotspot_tui::links::hyperlink::spans;
use hotspot_tui::links::link::{LinkBase, Osc8};
use hotspot_tui::model::Data;
use hotspot_tui::{State, View};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use read_path::{ALL_SCREENS, Screen, assert_clean, diff_out, draw_screens, out};

/// A file name as hostile as the names inside.
fn hostile_path() -> PathBuf {
    PathBuf::from(format!("/tmp/{}.hsp", hostile::nasty("file")))
}

fn text_of(buf: &Buffer) -> String {
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// How `nasty(tag)` begins once escaped.
fn visible(tag: &str) -> String {
    format!("{tag}a{ESCAPED_CSI}")
}

/// The visible form of the hostile text's first ESC sequence.
const ESCAPED_CSI: &str = "\\x1b[2J";
const ESCAPED_RLO: &str = "\\u{202e}";

fn state(width: u16, height: u16) -> State {
    let mut c = Capture::from_bytes(&hostile::nasty_names()).unwrap();
    c.path = hostile_path();
    let mut opts = read_path::view_options();
    opts.links = Some(LinkBase::new("acme/widget", None, vec!["/src".into()]).unwrap());
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, width, height));
    s.finished = true;
    s.refresh();
    s
}

#[test]
fn every_view_shows_hostile_names_escaped() {
    let mut s = state(200, 50);
    let screens = draw_screens(&mut s, ALL_SCREENS);
    assert_eq!(screens.len(), ALL_SCREENS.len(), "every screen was drawn");
    for (name, buf) in &screens {
        let text = text_of(buf);
        // The header: the target process (its escaped name fills the line).
        let header: String = text.lines().take(2).collect();
        assert!(header.contains(&visible("comm")), "{name}: {header}");
        let wants: &[&str] = match name.as_str() {
            "View(Flat)" | "NoKernelByThread" => &["fn_leaf", "inlined"],
            "View(Flame)" => &["fn_main"],
            "View(Stream)" => &["fn_main"],
            "View(Threads)" => &["thread", "renamed"],
            "Callers" => &["fn_leaf", "inlined"],
            _ => &[],
        };
        for w in wants {
            assert!(text.contains(w), "{name}: no {w}:\n{text}");
        }
        if !wants.is_empty() {
            assert!(
                text.contains(ESCAPED_CSI),
                "{name}: no escaped ESC:\n{text}"
            );
        }
    }
    // The flame view's details line names the frame under the cursor, escaped.
    let flame = &screens.iter().find(|(n, _)| n == "View(Flame)").unwrap().1;
    assert!(text_of(flame).contains(ESCAPED_RLO));
}

#[test]
fn osc8_links_are_built_from_sanitised_parts() {
    let mut s = state(200, 50);
    let mut seen = 0;
    for screen in [
        Screen::View(View::Flat),
        Screen::Callers,
        Screen::View(View::Flame),
    ] {
        draw_screens(&mut s, &[screen]);
        // Draw it again and leave the state on that view for the spans.
        match screen {
            Screen::View(v) => s.view = v,
            Screen::Callers => s.view = View::Callers,
            _ => {}
        }
        s.refresh();
        for span in spans(&s) {
            seen += 1;
            assert_clean("link text", &span.text);
            assert!(
                span.url
                    .starts_with("https://github.com/acme/widget/blob/HEAD/"),
                "{}",
                span.url
            );
            assert!(
                span.url
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'\\' && b != b'"'),
                "{}",
                span.url
            );
            // The sequence holds ESC only in its own OSC 8 framing.
            let seq = Osc8 {
                url: &span.url,
                text: &span.text,
            }
            .to_string();
            let inner = seq
                .strip_prefix("\x1b]8;;")
                .and_then(|r| r.strip_suffix("\x1b]8;;\x1b\\"))
                .unwrap();
            let (url, text) = inner.split_once("\x1b\\").unwrap();
            assert_eq!((url, text), (span.url.as_str(), span.text.as_str()));
            assert!(!text.contains(['\x1b', '\x07']), "{text:?}");
        }
    }
    // The hostile source paths under /src link (percent-encoded).
    assert!(seen >= 2, "{seen} link spans");
}

/// Every text output of `info`, `report` and `diff` over the hostile capture.
fn outputs() -> Vec<(&'static str, String)> {
    let bytes = hostile::nasty_names();
    let mut scan = Scan::from_bytes(
        &bytes,
        ScanOptions {
            measure_sizes: true,
            keep_order: true,
            ..ScanOptions::default()
        },
        &mut |_, _| {},
    )
    .unwrap();
    scan.capture.path = hostile_path();
    let slice = Slice::new(&scan, &Selection::default()).unwrap();
    let profile = pprof::profile(&slice);
    vec![
        ("info", hotspot_replay::info::scan_text(&scan)),
        ("info json", hotspot_replay::info::scan_json(&scan)),
        ("report", out(Format::Text, &slice, Some(30))),
        ("report json", out(Format::Json, &slice, None)),
        ("folded", out(Format::Folded, &slice, None)),
        (
            "svg",
            String::from_utf8(
                Format::Svg
                    .render(&slice, &ExportOptions::default())
                    .unwrap(),
            )
            .unwrap(),
        ),
        ("pprof strings", profile.string_table.join("\n")),
        ("speedscope", out(Format::Speedscope, &slice, None)),
        ("diff", diff_out(DiffFormat::Text, &slice, &slice, Some(30))),
        (
            "diff json",
            diff_out(DiffFormat::Json, &slice, &slice, None),
        ),
        (
            "diff folded",
            diff_out(DiffFormat::Folded, &slice, &slice, None),
        ),
    ]
}

#[test]
fn every_text_format_escapes_hostile_names() {
    for (what, text) in outputs() {
        assert_clean(what, &text);
        // `info` lists processes and threads, not functions.
        let name = if what.starts_with("info") {
            "comm"
        } else {
            "fn_leaf"
        };
        assert!(text.contains(name), "{what}: the name is gone:\n{text}");
        // JSON escapes the backslash of the visible escape once more.
        let visible = if what.contains("json") || what == "speedscope" {
            "\\\\x1b[2J"
        } else {
            ESCAPED_CSI
        };
        assert!(text.contains(visible), "{what}: no visible escape:\n{text}");
        if what.contains("json") || what == "speedscope" {
            read_path::assert_json(what, &text);
        }
    }
}

#[test]
fn the_flame_graph_is_xml_escaped() {
    let (_, svg) = outputs().into_iter().find(|(w, _)| *w == "svg").unwrap();
    assert!(!svg.contains("<b>"), "markup from a name reaches the SVG");
    assert!(
        svg.contains("&lt;b&gt;"),
        "the name's markup is shown escaped"
    );
    assert!(!svg.contains("&amp;\"'"), "quotes are not escaped");
}

#[test]
fn the_info_and_report_texts_name_the_hostile_session_escaped() {
    let outs = outputs();
    let info = &outs.iter().find(|(w, _)| *w == "info").unwrap().1;
    for w in [
        "host", "kernel", "arch", "cmd", "arg", "ver", "comm", "argv0", "thread",
    ] {
        assert!(info.contains(&visible(w)), "info shows no {w}:\n{info}");
    }
    // The 64 KiB name is cut: no line of a text report is longer than a few KiB.
    for (what, text) in &outs {
        if matches!(*what, "info" | "report" | "diff") {
            let longest = text.lines().map(str::len).max().unwrap_or(0);
            assert!(longest < 8 << 10, "{what}: a {longest}-byte line");
        }
    }
}
