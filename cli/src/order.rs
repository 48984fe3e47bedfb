//! The order in which `sinkcoord` lists tags: by name, with every run of
//! digits compared as a number, so `savepoint-1`, `savepoint-12`,
//! `savepoint-1000001` come in that order (byte order put
//! `savepoint-1000001` before `savepoint-12`, issue 25).

use std::cmp::Ordering;

/// Compares two names chunk by chunk: a run of ASCII digits against a run
/// of digits by its value (of any length: leading zeros are skipped and
/// then the longer run is the larger, so no integer can overflow), anything
/// else by bytes. Names equal in that sense (`a01`, `a1`) fall back to
/// byte order, so the order is total and the same on every run.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        if x[i].is_ascii_digit() && y[j].is_ascii_digit() {
            let (ri, rj) = (digit_run(x, i), digit_run(y, j));
            let order = cmp_digits(&x[i..ri], &y[j..rj]);
            if order != Ordering::Equal {
                return order;
            }
            (i, j) = (ri, rj);
        } else {
            let order = x[i].cmp(&y[j]);
            if order != Ordering::Equal {
                return order;
            }
            (i, j) = (i + 1, j + 1);
        }
    }
    (x.len() - i).cmp(&(y.len() - j)).then_with(|| x.cmp(y))
}

/// The end of the run of digits starting at `from`.
fn digit_run(s: &[u8], from: usize) -> usize {
    s[from..]
        .iter()
        .position(|b| !b.is_ascii_digit())
        .map_or(s.len(), |n| from + n)
}

/// Two runs of digits by value.
fn cmp_digits(a: &[u8], b: &[u8]) -> Ordering {
    let strip = |s: &[u8]| -> usize { s.iter().take_while(|b| **b == b'0').count() };
    let (a, b) = (&a[strip(a)..], &b[strip(b)..]);
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    #[test]
    fn savepoints_sort_by_their_number() {
        assert_eq!(
            sorted(&[
                "savepoint-1000001",
                "savepoint-12",
                "savepoint-1",
                "savepoint-2"
            ]),
            [
                "savepoint-1",
                "savepoint-2",
                "savepoint-12",
                "savepoint-1000001"
            ]
        );
    }

    #[test]
    fn names_without_numbers_and_mixed_names() {
        assert_eq!(
            sorted(&["release", "b", "a10", "a9", "a", "savepoint-3", "9", "10"]),
            ["9", "10", "a", "a9", "a10", "b", "release", "savepoint-3"]
        );
        // A run longer than any integer compares by value, without overflow.
        let huge = format!("x{}", "9".repeat(60));
        let huger = format!("x1{}", "0".repeat(60));
        assert_eq!(natural_cmp(&huge, &huger), Ordering::Less);
        assert_eq!(natural_cmp("", ""), Ordering::Equal);
        assert_eq!(natural_cmp("", "a"), Ordering::Less);
    }

    #[test]
    fn the_order_is_total() {
        // Equal numbers with other spellings still differ, consistently.
        assert_eq!(natural_cmp("a01", "a1"), "a01".cmp("a1"));
        assert_eq!(natural_cmp("a1", "a01"), "a1".cmp("a01"));
        assert_eq!(natural_cmp("a1b", "a1b"), Ordering::Equal);
        let names = [
            "a01", "a1", "a001b", "a1b", "a", "a0", "a00", "é1", "é01", "1é",
        ];
        for x in names {
            for y in names {
                assert_eq!(natural_cmp(x, y), natural_cmp(y, x).reverse(), "{x} {y}");
                assert_eq!(natural_cmp(x, y) == Ordering::Equal, x == y, "{x} {y}");
            }
        }
    }
}
