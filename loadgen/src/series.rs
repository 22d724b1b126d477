//! The pure core of every report: intervals in, live rows and totals out. A single run
//! feeds it the intervals it takes; `merge` feeds it the intervals of several
//! processes' logs, added up per time slot. Either way the totals are the union of
//! the intervals, so a merged report is exactly the report of the combined samples.

use hdrhistogram::Histogram;

use crate::plan::Scenario;
use crate::report::Row;
use crate::stats::{add, histogram, Interval, Op, Percentiles};

pub struct Series {
    counted: &'static [Op],
    shown: Vec<Op>,
    data_size: usize,
    /// Every interval so far, added up.
    totals: Interval,
    /// The counted operations' samples, added up: the requests' latency.
    requests: Histogram<u64>,
    rows: Vec<Row>,
}

impl Series {
    pub fn new(scenario: Scenario, get_after_notify: bool, data_size: usize) -> Series {
        Series {
            counted: scenario.counted_ops(),
            shown: scenario.ops(get_after_notify),
            data_size,
            totals: Interval::empty(0.0, 0.0),
            requests: histogram(),
            rows: Vec::new(),
        }
    }

    /// Adds the next interval and makes its row.
    pub fn push(&mut self, interval: &Interval) -> &Row {
        let mut recent = histogram();
        for &op in self.counted {
            add(&mut recent, interval.hist(op));
        }
        add(&mut self.requests, &recent);
        self.totals.absorb(interval);
        let t = interval.start + interval.length;
        self.totals.length = self.totals.length.max(t);
        let total_req = self.requests.len();
        let row = Row {
            t,
            data_size: self.data_size,
            total_req,
            recent_tps: recent.len() as f64 / interval.length.max(1e-9),
            avg_tps: total_req as f64 / t.max(1e-9),
            recent_rsp_time: recent.mean() / 1000.0,
            avg_rsp_time: self.requests.mean() / 1000.0,
            recent_p99: recent.value_at_quantile(0.99) as f64 / 1000.0,
            fail_total: Op::ALL.iter().map(|&op| self.totals.failures(op)).sum(),
            ops: self
                .shown
                .iter()
                .map(|&op| {
                    (
                        op,
                        Percentiles::of(interval.hist(op), interval.failures(op)),
                    )
                })
                .collect(),
        };
        self.rows.push(row);
        self.rows.last().expect("just pushed")
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    pub fn into_rows(self) -> Vec<Row> {
        self.rows
    }

    /// Every sample so far, per operation.
    pub fn totals(&self) -> &Interval {
        &self.totals
    }

    /// The requests' latency over the whole run.
    pub fn requests(&self) -> Percentiles {
        let failures = self
            .counted
            .iter()
            .map(|&op| self.totals.failures(op))
            .sum();
        Percentiles::of(&self.requests, failures)
    }

    /// The operations the scenario times, in report order.
    pub fn shown(&self) -> &[Op] {
        &self.shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start: f64, ops: &[(Op, &[u64])], failures: &[(Op, u64)]) -> Interval {
        let mut i = Interval::empty(start, 1.0);
        for (op, values) in ops {
            for v in *values {
                i.hist_mut(*op).record(*v).unwrap();
            }
        }
        for (op, n) in failures {
            *i.failures_mut(*op) = *n;
        }
        i
    }

    #[test]
    fn pubsub_rows_count_publishes_only() {
        let mut series = Series::new(Scenario::Pubsub, true, 255);
        let row = series
            .push(&interval(
                0.0,
                &[
                    (Op::Create, &[1000, 3000]),
                    (Op::Exists, &[500; 6]),
                    (Op::GetData, &[500; 6]),
                ],
                &[(Op::Event, 1)],
            ))
            .clone();
        assert_eq!(row.total_req, 2);
        assert!((row.recent_tps - 2.0).abs() < 1e-9);
        assert!((row.recent_rsp_time - 2.0).abs() < 0.01);
        assert_eq!(row.fail_total, 1);
        let row = series
            .push(&interval(1.0, &[(Op::Create, &[2000])], &[]))
            .clone();
        assert_eq!(row.total_req, 3);
        assert!((row.avg_tps - 1.5).abs() < 1e-9);
        assert_eq!(series.totals().hist(Op::Exists).len(), 6);
        assert_eq!(series.requests().count, 3);
    }

    #[test]
    fn create_delete_counts_both() {
        let mut series = Series::new(Scenario::CreateDelete, false, 255);
        let row = series
            .push(&interval(
                0.0,
                &[(Op::Create, &[1000]), (Op::Delete, &[1000, 1000])],
                &[(Op::Delete, 2)],
            ))
            .clone();
        assert_eq!(row.total_req, 3);
        assert_eq!(series.requests().failures, 2);
    }
}
