//! The comparison table: one row per figure, with its baseline, the ratio
//! and the target it is held to.

use std::time::Duration;

/// One figure of the suite.
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// toolhost's value.
    pub value: String,
    /// What it is compared with, and that value.
    pub baseline: String,
    /// toolhost / baseline (or the speed-up, where said).
    pub ratio: String,
    /// The goal, from `docs/performance.md`.
    pub target: String,
    /// Whether the target is met (`None`: no target).
    pub met: Option<bool>,
}

impl Row {
    pub fn new(figure: impl Into<String>, value: impl Into<String>) -> Row {
        Row {
            figure: figure.into(),
            value: value.into(),
            baseline: String::new(),
            ratio: String::new(),
            target: String::new(),
            met: None,
        }
    }

    /// A time against a baseline time, both shown by `show`, with their
    /// ratio.
    pub fn timed(
        figure: impl Into<String>,
        ours: Duration,
        against: &str,
        theirs: Duration,
        show: fn(Duration) -> String,
    ) -> Row {
        let baseline = format!("{against} {}", show(theirs));
        Row::compared(figure, show(ours), baseline, ratio(ours, theirs))
    }

    /// A figure against its baseline, with their ratio.
    pub fn compared(
        figure: impl Into<String>,
        value: impl Into<String>,
        baseline: impl Into<String>,
        ratio: f64,
    ) -> Row {
        Row::new(figure, value).baseline(baseline).ratio(ratio)
    }

    pub fn baseline(mut self, baseline: impl Into<String>) -> Row {
        self.baseline = baseline.into();
        self
    }

    pub fn ratio(mut self, ratio: f64) -> Row {
        self.ratio = format!("{ratio:.2}×");
        self
    }

    pub fn target(mut self, target: impl Into<String>, met: bool) -> Row {
        self.target = target.into();
        self.met = Some(met);
        self
    }
}

/// Rows as a Markdown table (so `docs/performance.md` can quote it as is).
pub fn print(rows: &[Row]) {
    let header = ["figure", "toolhost", "baseline", "ratio", "target", "met"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.clone(),
                r.value.clone(),
                r.baseline.clone(),
                r.ratio.clone(),
                r.target.clone(),
                match r.met {
                    Some(true) => "yes".into(),
                    Some(false) => "**no**".into(),
                    None => String::new(),
                },
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        println!("| {} |", padded.join(" | "));
    };
    line(&header.map(String::from));
    line(&widths.map(|w| "-".repeat(w)));
    for row in &cells {
        line(row);
    }
}

pub fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

pub fn mb(bytes: f64) -> String {
    format!("{:.2} MB", bytes / 1e6)
}

pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// The `q` quantile (0..=1) of `samples`, nearest rank.
pub fn quantile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn median(samples: &[Duration]) -> Duration {
    quantile(samples, 0.5)
}

/// The medians of `a` and `b`, each timed `rounds` times in turn, so that a
/// change in the machine's load meets both alike.
pub fn alternating_medians(
    rounds: usize,
    mut a: impl FnMut() -> Duration,
    mut b: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    let (mut first, mut second) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for _ in 0..rounds {
        first.push(a());
        second.push(b());
    }
    (median(&first), median(&second))
}
