//! Counts as regression budgets: a measured count may exceed its baseline by
//! `max(2, ceil(2%))`, response bytes by `ceil(1%)`. Counts repeat exactly for
//! a fixed seed, so the margins are tight on purpose: one extra read per
//! request fits, one extra read per returned row does not, once the request
//! returns more than two rows (and more than 2 % of the baseline). A test
//! whose request returns one or two rows hides a per-row N+1 under the
//! default margin: bound its counts exactly ([`Margin::EXACT`],
//! [`Budget::exact`]), so that one extra call fails. Other figures
//! (a page's, measured by a browser) bring their own margin
//! ([`Margin::Fixed`], [`Margin::Share`], [`BudgetCheck::bounded`]).

use std::fmt;

mod by_key;

pub use by_key::Budget;

/// How a bounded value's margin is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Margin {
    /// Counts: `max(2, ceil(2% of baseline))`.
    Count,
    /// Response bytes: `ceil(1% of baseline)`.
    Bytes,
    /// A fixed margin, whatever the baseline.
    Fixed(u64),
    /// `max(at_least, ceil(percent % of baseline))`.
    Share {
        /// The least margin.
        at_least: u64,
        /// The margin's share of the baseline, in percent.
        percent: u64,
    },
}

impl Margin {
    /// No margin: the value may not pass its baseline at all.
    pub const EXACT: Margin = Margin::Fixed(0);

    /// The margin over `baseline`.
    ///
    /// ```
    /// use perf_trace_core::budget::Margin;
    /// assert_eq!(Margin::Count.of(10), 2);
    /// assert_eq!(Margin::Count.of(101), 3);
    /// assert_eq!(Margin::Bytes.of(1_000), 10);
    /// assert_eq!(Margin::Bytes.of(1_001), 11);
    /// assert_eq!(Margin::Fixed(10).of(2_400), 10);
    /// let half = Margin::Share { at_least: 3, percent: 50 };
    /// assert_eq!(half.of(2), 3);
    /// assert_eq!(half.of(9), 5);
    /// assert_eq!(Margin::EXACT.of(2_400), 0);
    /// ```
    pub fn of(self, baseline: u64) -> u64 {
        match self {
            Margin::Count => 2.max(baseline.div_ceil(50)),
            Margin::Bytes => baseline.div_ceil(100),
            Margin::Fixed(margin) => margin,
            Margin::Share { at_least, percent } => {
                at_least.max(baseline.saturating_mul(percent).div_ceil(100))
            }
        }
    }
}

/// One bounded value of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// The value's name (`authz_store_calls`, `response_bytes`, ...).
    pub name: String,
    /// What this run measured.
    pub measured: u64,
    /// The recorded baseline.
    pub baseline: u64,
    /// How the margin is computed.
    pub margin: Margin,
}

impl Bound {
    /// The largest value that passes.
    pub fn budget(&self) -> u64 {
        self.baseline + self.margin.of(self.baseline)
    }

    fn over(&self) -> bool {
        self.measured > self.budget()
    }

    fn stale(&self) -> bool {
        self.measured + self.margin.of(self.baseline) < self.baseline
    }
}

/// The budgets of one request, checked together.
///
/// ```
/// use perf_trace_core::budget::BudgetCheck;
/// let check = BudgetCheck::new("project-first-page", "main 1a2b3c4")
///     .count("authz_store_calls", 12, 12)
///     .count("audit_records", 305, 300)
///     .bytes("response_bytes", 40_100, 40_000);
/// assert_eq!(
///     check.measured_line(),
///     "measured: project-first-page authz_store_calls=12 audit_records=305 response_bytes=40100"
/// );
/// assert!(check.evaluate().failures.is_empty());
///
/// let over = BudgetCheck::new("project-first-page", "main 1a2b3c4").count("authz_store_calls", 112, 12);
/// let failure = over.evaluate().failures.remove(0);
/// assert!(failure.contains("authz_store_calls = 112 is over its budget 14"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetCheck {
    request: String,
    baseline_source: String,
    bounds: Vec<Bound>,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetOutcome {
    /// One message per value over its budget; any makes the check fail.
    pub failures: Vec<String>,
    /// One note per value below its baseline by more than the margin (the
    /// baseline is stale); never a failure.
    pub notes: Vec<String>,
}

/// A failed budget check: the messages name each count and its budget.
/// Its `Debug` is its message, so that `check().unwrap()` in a test prints
/// the messages as they are.
#[derive(Clone, PartialEq, Eq)]
pub struct BudgetExceeded {
    /// One message per value over its budget.
    pub failures: Vec<String>,
}

impl fmt::Debug for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("over budget:\n")?;
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.failures.join("\n"))
    }
}

impl std::error::Error for BudgetExceeded {}

impl BudgetCheck {
    /// Budgets of `request`, whose baselines were measured at `baseline_source`
    /// (`main <sha>` or a short description of the change; empty when not
    /// known, and then not named in the messages).
    pub fn new(request: impl Into<String>, baseline_source: impl Into<String>) -> Self {
        BudgetCheck {
            request: request.into(),
            baseline_source: baseline_source.into(),
            bounds: Vec::new(),
        }
    }

    /// Bounds a host-independent count.
    pub fn count(self, name: impl Into<String>, measured: u64, baseline: u64) -> Self {
        self.bounded(name, measured, baseline, Margin::Count)
    }

    /// Bounds a response size in bytes.
    pub fn bytes(self, name: impl Into<String>, measured: u64, baseline: u64) -> Self {
        self.bounded(name, measured, baseline, Margin::Bytes)
    }

    /// Bounds a value with a margin of its own.
    ///
    /// ```
    /// use perf_trace_core::budget::{BudgetCheck, Margin};
    /// let check = BudgetCheck::new("grid", "main 1a2b3c4")
    ///     .bounded("dom_elements", 1_211, 1_200, Margin::Fixed(10));
    /// assert_eq!(
    ///     check.evaluate().failures,
    ///     ["grid: dom_elements = 1211 is over its budget 1210 (baseline 1200 + margin 10; baselines from main 1a2b3c4)"]
    /// );
    /// ```
    pub fn bounded(
        mut self,
        name: impl Into<String>,
        measured: u64,
        baseline: u64,
        margin: Margin,
    ) -> Self {
        self.bounds.push(Bound {
            name: name.into(),
            measured,
            baseline,
            margin,
        });
        self
    }

    /// The bounded values.
    pub fn bounds(&self) -> &[Bound] {
        &self.bounds
    }

    /// `measured: <request> name=value ...`, the line to read when updating baselines.
    pub fn measured_line(&self) -> String {
        let mut line = format!("measured: {}", self.request);
        for b in &self.bounds {
            line.push_str(&format!(" {}={}", b.name, b.measured));
        }
        line
    }

    /// Compares every value with its budget.
    pub fn evaluate(&self) -> BudgetOutcome {
        let mut outcome = BudgetOutcome::default();
        for b in &self.bounds {
            let margin = b.margin.of(b.baseline);
            if b.over() {
                let source = if self.baseline_source.is_empty() {
                    String::new()
                } else {
                    format!("; baselines from {}", self.baseline_source)
                };
                outcome.failures.push(format!(
                    "{}: {} = {} is over its budget {} (baseline {} + margin {}{source})",
                    self.request,
                    b.name,
                    b.measured,
                    b.budget(),
                    b.baseline,
                    margin,
                ));
            } else if b.stale() {
                outcome.notes.push(format!(
                    "note: {}: {} = {} is below its baseline {} by more than the margin {}: the baseline is stale; lower it to hold the improvement",
                    self.request, b.name, b.measured, b.baseline, margin
                ));
            }
        }
        outcome
    }

    /// Prints the measured line and any notes, and fails when a value is over
    /// its budget.
    pub fn check(&self) -> Result<(), BudgetExceeded> {
        println!("{}", self.measured_line());
        let outcome = self.evaluate();
        for note in &outcome.notes {
            println!("{note}");
        }
        if outcome.failures.is_empty() {
            Ok(())
        } else {
            Err(BudgetExceeded {
                failures: outcome.failures,
            })
        }
    }
}
