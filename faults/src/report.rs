//! The report of a run: a row per nemesis (cycles, operations, acknowledged, violations),
//! a row per workload, the measurements, and every violation.

use std::fmt;

use crate::history::{ms, Micros, Tally, Violation};
use crate::nemesis::{Fault, NemesisKind};
use crate::workload::Checked;

/// One fault/heal cycle.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// The nemesis.
    pub kind: NemesisKind,
    /// What it did.
    pub fault: Fault,
    /// When the fault began.
    pub start: Micros,
    /// When it was healed.
    pub end: Micros,
    /// How long after the heal the servers caught up.
    pub converged: Option<Micros>,
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The seed that replays the run's choices.
    pub seed: u64,
    /// The harness instance (subnet 10.77.K.0/24).
    pub instance: u8,
    /// The cycles, in order.
    pub cycles: Vec<Cycle>,
    /// Each workload's verdict.
    pub checks: Vec<Checked>,
    /// The stall probe's operations.
    pub probe: Tally,
    /// Write stall per leader isolation.
    pub stalls: Vec<Micros>,
    /// Time until a client of a cut-off server was told.
    pub told: Vec<Micros>,
    /// The bound on `told`.
    pub told_bound: Micros,
    /// Every violation, in time order.
    pub violations: Vec<Violation>,
}

impl Report {
    /// True if no check failed.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// The index of the cycle that time `t` belongs to (from its fault to the next).
    fn cycle_of(&self, t: Micros) -> usize {
        self.cycles.iter().rposition(|c| c.start <= t).unwrap_or(0)
    }

    /// The distinct checks that failed.
    pub fn failed_checks(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.violations.iter().map(|v| v.check).collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// Median and max in ms, `-` when there are no samples.
fn summary(samples: &[Micros]) -> String {
    if samples.is_empty() {
        return format!("{:>9} {:>9} {:>4}", "-", "-", 0);
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let max = sorted[sorted.len() - 1];
    format!("{:>9.0} {:>9.0} {:>4}", ms(median), ms(max), sorted.len())
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} (instance {})", self.seed, self.instance)?;
        writeln!(
            f,
            "{:<10} {:>6} {:>8} {:>8} {:>10}",
            "nemesis", "cycles", "ops", "acked", "violations"
        )?;
        for kind in NemesisKind::ALL {
            let mine: Vec<usize> = (0..self.cycles.len())
                .filter(|&i| self.cycles[i].kind == kind)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let (mut ops, mut acked) = (0, 0);
            for checked in &self.checks {
                for &(t, ok) in &checked.timeline {
                    if mine.contains(&self.cycle_of(t)) {
                        ops += 1;
                        acked += usize::from(ok);
                    }
                }
            }
            let violations = self
                .violations
                .iter()
                .filter(|v| mine.contains(&self.cycle_of(v.at)))
                .count();
            writeln!(
                f,
                "{:<10} {:>6} {:>8} {:>8} {:>10}",
                kind.name(),
                mine.len(),
                ops,
                acked,
                violations
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<16} {:>8} {:>8} {:>10}",
            "workload", "ops", "acked", "violations"
        )?;
        for checked in &self.checks {
            writeln!(
                f,
                "{:<16} {:>8} {:>8} {:>10}",
                checked.workload,
                checked.tally.ops,
                checked.tally.acked,
                checked.violations.len()
            )?;
        }
        writeln!(
            f,
            "{:<16} {:>8} {:>8} {:>10}",
            "(stall probe)", self.probe.ops, self.probe.acked, "-"
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<52} {:>9} {:>9} {:>4}",
            "measurement (ms)", "median", "max", "n"
        )?;
        writeln!(
            f,
            "{:<52} {}",
            "writes stalled per leader isolation",
            summary(&self.stalls)
        )?;
        writeln!(
            f,
            "{:<52} {}",
            format!(
                "until a client of a cut-off server is told (<= {:.0})",
                ms(self.told_bound)
            ),
            summary(&self.told)
        )?;
        let converged: Vec<Micros> = self.cycles.iter().filter_map(|c| c.converged).collect();
        writeln!(
            f,
            "{:<52} {}",
            "convergence after heal",
            summary(&converged)
        )?;
        for checked in &self.checks {
            for note in &checked.notes {
                writeln!(f, "note [{}]: {note}", checked.workload)?;
            }
        }
        if self.violations.is_empty() {
            writeln!(f, "\nno violations")?;
        } else {
            writeln!(
                f,
                "\n{} violation(s) in {:?}:",
                self.violations.len(),
                self.failed_checks()
            )?;
            for v in self.violations.iter().take(40) {
                writeln!(f, "  cycle {}: {v}", self.cycle_of(v.at) + 1)?;
            }
            if self.violations.len() > 40 {
                writeln!(f, "  ... and {} more", self.violations.len() - 40)?;
            }
        }
        Ok(())
    }
}
