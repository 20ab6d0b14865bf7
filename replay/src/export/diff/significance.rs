//! Which changes of a diff are beyond sampling noise: a two-proportion z-test per share,
//! a conditional rate test per time-per-second, and Holm's step-down correction over all of
//! a diff's tests, so that the chance of marking any unchanged function stays under the
//! chosen error rate however many functions the captures hold.
//!
//! Why these: a sample is a draw of "which stack was running"; a function's share in a
//! capture is then a binomial proportion, and two captures' shares compare by the
//! two-proportion test (pooled variance), as a rate of samples per second compares by the
//! binomial split of the two counts under equal rates. Both need only the counts the diff
//! already has, so they cost nothing over the diff itself. Holm rather than
//! Benjamini-Hochberg: a CI gate wants the family-wise error rate (the chance of one false
//! alarm on a build), not a share of false alarms among many.

/// The default family-wise error rate.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Two-sided p-value of a standard normal statistic.
pub fn p_two_sided(z: f64) -> f64 {
    if !z.is_finite() {
        return if z.is_nan() { 1.0 } else { 0.0 };
    }
    libm::erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// The z statistic of `x2 / n2` against `x1 / n1` (positive when the second share is
/// larger), with the pooled variance; 0 when it is undefined (an empty side, or a
/// function in every sample or none of both).
pub fn two_proportion_z(x1: u64, n1: u64, x2: u64, n2: u64) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 0.0;
    }
    let (x1, n1, x2, n2) = (x1 as f64, n1 as f64, x2 as f64, n2 as f64);
    let pooled = (x1 + x2) / (n1 + n2);
    let var = pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2);
    if var <= 0.0 {
        return 0.0;
    }
    (x2 / n2 - x1 / n1) / var.sqrt()
}

/// The z statistic of a count `c2` over `w2` opportunities against `c1` over `w1` (say,
/// samples over seconds / period): under equal rates, `c2` given `c1 + c2` is binomial
/// with p = w2 / (w1 + w2). Positive when the second rate is higher; 0 when undefined.
pub fn rate_z(c1: u64, w1: f64, c2: u64, w2: f64) -> f64 {
    let n = (c1 + c2) as f64;
    if n == 0.0 || !(w1 > 0.0 && w2 > 0.0) {
        return 0.0;
    }
    let p = w2 / (w1 + w2);
    let var = n * p * (1.0 - p);
    if var <= 0.0 {
        return 0.0;
    }
    (c2 as f64 - n * p) / var.sqrt()
}

/// Holm's step-down adjustment: each p-value made comparable with the family-wise error
/// rate directly (a test is significant when its adjusted p is below alpha). Keeps the
/// input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let scaled = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(scaled);
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn p_values_of_known_statistics() {
        assert!(close(p_two_sided(0.0), 1.0, 1e-12));
        assert!(close(p_two_sided(1.959_963_985), 0.05, 1e-8));
        assert!(close(p_two_sided(-2.575_829_304), 0.01, 1e-8));
        assert!(p_two_sided(40.0) < 1e-300);
        assert_eq!(p_two_sided(f64::NAN), 1.0);
    }

    #[test]
    fn two_proportions_as_a_textbook_computes_them() {
        // 30 of 100 against 45 of 100: pooled 0.375, se 0.068465, z 2.1909.
        let z = two_proportion_z(30, 100, 45, 100);
        assert!(close(z, 2.190_890, 1e-5), "{z}");
        assert!(close(two_proportion_z(45, 100, 30, 100), -z, 1e-12));
        assert_eq!(two_proportion_z(0, 100, 0, 100), 0.0);
        assert_eq!(two_proportion_z(100, 100, 50, 50), 0.0);
        assert_eq!(two_proportion_z(1, 0, 1, 10), 0.0);
    }

    #[test]
    fn rates_compare_by_the_split_of_their_counts() {
        // Equal rates over unequal lengths: 100 in 1 s, 200 in 2 s.
        assert!(close(rate_z(100, 1.0, 200, 2.0), 0.0, 1e-12));
        // Twice the rate over equal lengths: 100 vs 200, p = 1/2: z = (200-150)/sqrt(75).
        assert!(close(
            rate_z(100, 1.0, 200, 1.0),
            50.0 / 75f64.sqrt(),
            1e-12
        ));
        assert_eq!(rate_z(0, 1.0, 0, 1.0), 0.0);
        assert_eq!(rate_z(5, 0.0, 5, 1.0), 0.0);
    }

    #[test]
    fn holm_steps_down_and_stays_monotone() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        // Sorted: 0.01 (x4 = 0.04), 0.03 (x3 = 0.09), 0.04 (x2 = 0.08 -> 0.09), 0.5 (x1).
        let want = [0.04, 0.09, 0.09, 0.5];
        for (a, w) in adj.iter().zip(want) {
            assert!(close(*a, w, 1e-12), "{adj:?}");
        }
        assert_eq!(holm(&[]), Vec::<f64>::new());
        assert_eq!(holm(&[0.9, 0.9]), vec![1.0, 1.0]);
    }
}
