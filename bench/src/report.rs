//! Plain, greppable output: one line per figure, polylock first, then its peer, then the
//! ratio polylock ÷ peer. Figures only: nothing here passes or fails.

/// Prints `section label cell | cell | ...` with the first two columns aligned.
pub fn line(section: &str, label: &str, cells: &[String]) {
    println!("{section:<10} {label:<28} {}", cells.join(" | "));
}

/// `who 1,234,567 unit`
pub fn rate(who: &str, per_sec: f64, unit: &str) -> String {
    format!("{who} {} {unit}", count(per_sec))
}

/// `polylock/peer 0.44x`
pub fn versus(ours: &str, peer: &str, our_rate: f64, peer_rate: f64) -> String {
    format!("{ours}/{peer} {}", ratio(our_rate / peer_rate))
}

/// A whole number with thousands separators: 4,096,000.
pub fn count(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A ratio with two significant figures below 0.1 (0.0017x), two decimals up to 100, whole
/// above.
pub fn ratio(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".to_string();
    }
    if value == 0.0 {
        return "0x".to_string();
    }
    if value >= 100.0 {
        return format!("{value:.0}x");
    }
    if value >= 0.1 {
        return format!("{value:.2}x");
    }
    let decimals = (1.0 - value.log10().floor()) as usize;
    format!("{value:.decimals$}x")
}

/// A duration in milliseconds, three significant figures below 10 ms: 0.312 ms, 1.07 ms, 42.1 ms.
pub fn millis(duration: std::time::Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    let decimals = match ms {
        ms if ms < 1.0 => 3,
        ms if ms < 10.0 => 2,
        ms if ms < 100.0 => 1,
        _ => 0,
    };
    format!("{ms:.decimals$} ms")
}

/// A fraction as a percentage: 0.25 -> 25.0%.
pub fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ratios_read_well() {
        assert_eq!(count(4_096_000.4), "4,096,000");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1000.0), "1,000");
        assert_eq!(ratio(0.441), "0.44x");
        assert_eq!(ratio(0.00171), "0.0017x");
        assert_eq!(ratio(23.94), "23.94x");
        assert_eq!(ratio(1234.0), "1234x");
        assert_eq!(percent(0.25), "25.0%");
        assert_eq!(millis(std::time::Duration::from_micros(312)), "0.312 ms");
        assert_eq!(millis(std::time::Duration::from_micros(1070)), "1.07 ms");
        assert_eq!(millis(std::time::Duration::from_micros(42_140)), "42.1 ms");
        assert_eq!(millis(std::time::Duration::from_millis(250)), "250 ms");
    }
}
