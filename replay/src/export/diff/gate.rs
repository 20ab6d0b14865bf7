//! The CI gate of `hotspot diff --fail-if RULE`: a rule names what may not grow (a
//! function's self or total share, in percentage points, or its time per second, in %)
//! and by how much; a function breaks it when it grew by more than that and the growth is
//! beyond sampling noise at the diff's error rate ([`super::significance`]).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::{Change, Diff};
use crate::sanitize::display;

/// Which of a function's weights a rule watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Samples with the function as the leaf.
    SelfTime,
    /// Samples with the function anywhere on the stack.
    Total,
}

/// What a rule's threshold is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Percentage points of each capture's samples (`5pt`).
    Points,
    /// Per cent growth of time per second covered (`20%`); a function the base did not
    /// have grew without bound.
    Percent,
}

/// One `--fail-if` rule: `self>2pt`, `total>5pt`, `self>20%`, `total>20%`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub part: Part,
    pub threshold: f64,
    pub unit: Unit,
}

/// A rule that does not parse, with what is expected.
#[derive(Debug, Error, PartialEq, Eq)]
#[error(
    "'{0}': expected self>N or total>N, N in percentage points (5pt) or per cent of time \
     per second (20%), e.g. total>5pt"
)]
pub struct BadRule(pub String);

impl FromStr for Rule {
    type Err = BadRule;

    fn from_str(s: &str) -> Result<Rule, BadRule> {
        let bad = || BadRule(display(s));
        let text = s.trim();
        let (part, rest) = text.split_once('>').ok_or_else(bad)?;
        let part = match part.trim() {
            "self" => Part::SelfTime,
            "total" => Part::Total,
            _ => return Err(bad()),
        };
        let rest = rest.trim();
        let (number, unit) = if let Some(n) = rest.strip_suffix("pt") {
            (n, Unit::Points)
        } else if let Some(n) = rest.strip_suffix('%') {
            (n, Unit::Percent)
        } else {
            return Err(bad());
        };
        let threshold: f64 = number.trim().parse().map_err(|_| bad())?;
        if !threshold.is_finite() || threshold < 0.0 {
            return Err(bad());
        }
        Ok(Rule {
            part,
            threshold,
            unit,
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = match self.part {
            Part::SelfTime => "self",
            Part::Total => "total",
        };
        match self.unit {
            Unit::Points => write!(f, "{part}>{}pt", self.threshold),
            Unit::Percent => write!(f, "{part}>{}%", self.threshold),
        }
    }
}

/// A function that broke a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub rule: Rule,
    pub change: Change,
    /// The growth the rule measured (points, or per cent; infinite for a new function).
    pub growth: f64,
    /// Its Holm-adjusted p-value.
    pub p: f64,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.rule.part {
            Part::SelfTime => "self",
            Part::Total => "total",
        };
        let c = &self.change;
        write!(
            f,
            "{} ({}): {what} ",
            display(&c.key.function),
            display(&c.key.module)
        )?;
        match self.rule.unit {
            Unit::Points => write!(f, "share {:+.2} pt", self.growth)?,
            Unit::Percent if self.growth.is_infinite() => write!(f, "time per second: new")?,
            Unit::Percent => write!(f, "time per second {:+.1}%", self.growth)?,
        }
        write!(f, " > {} (p = {:.2e})", self.rule, self.p)
    }
}

impl Rule {
    /// The growth this rule measures on `c`, and its adjusted p-value.
    fn measure(&self, c: &Change) -> (f64, f64) {
        match (self.unit, self.part) {
            (Unit::Points, Part::SelfTime) => (c.delta_self, c.self_p),
            (Unit::Points, Part::Total) => (c.delta_total, c.total_p),
            (Unit::Percent, Part::SelfTime) => (
                Change::rate_growth(c.base_self_rate, c.new_self_rate).unwrap_or(
                    if c.new_self_rate > 0.0 {
                        f64::INFINITY
                    } else {
                        0.0
                    },
                ),
                c.self_rate_p,
            ),
            (Unit::Percent, Part::Total) => (
                Change::rate_growth(c.base_total_rate, c.new_total_rate).unwrap_or(
                    if c.new_total_rate > 0.0 {
                        f64::INFINITY
                    } else {
                        0.0
                    },
                ),
                c.total_rate_p,
            ),
        }
    }
}

/// Every function that breaks one of `rules` in `diff`, the largest growth of each rule
/// first.
pub fn check(diff: &Diff, rules: &[Rule]) -> Vec<Violation> {
    let mut out = Vec::new();
    for rule in rules {
        let mut broken: Vec<Violation> = diff
            .changes
            .iter()
            .filter_map(|c| {
                let (growth, p) = rule.measure(c);
                (growth > rule.threshold && diff.significant(p)).then(|| Violation {
                    rule: *rule,
                    change: c.clone(),
                    growth,
                    p,
                })
            })
            .collect();
        broken.sort_by(|a, b| b.growth.total_cmp(&a.growth));
        out.extend(broken);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_print_back() {
        for text in ["self>2pt", "total>5pt", "self>20%", "total>0.5%"] {
            let rule: Rule = text.parse().expect(text);
            assert_eq!(rule.to_string(), text);
        }
        let r: Rule = " total > 5 pt".parse().expect("spaces allowed");
        assert_eq!(r.part, Part::Total);
        assert_eq!(r.unit, Unit::Points);
        assert_eq!(r.threshold, 5.0);
    }

    #[test]
    fn bad_rules_say_what_is_expected() {
        for text in [
            "",
            "total",
            "total>5",
            "cpu>5pt",
            "self>-1pt",
            "self>nanpt",
            "self<5pt",
        ] {
            let e = text.parse::<Rule>().expect_err(text);
            assert!(e.to_string().contains("expected self>N or total>N"), "{e}");
        }
        let e = "self>\x1b[31m%".parse::<Rule>().expect_err("escape");
        assert!(!e.to_string().contains('\x1b'), "{e}");
    }
}
