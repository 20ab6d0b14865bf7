//! Links out of the views: a function's source as a repository URL built from `--repo`
//! (`link`), and the spans where the views overlay them as OSC 8 hyperlinks
//! (`hyperlink`).

pub mod hyperlink;
pub mod link;
