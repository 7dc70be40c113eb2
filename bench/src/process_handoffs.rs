//! Hand-overs between the `sqlite` section's contending processes: each worker records, on
//! the system-wide monotonic clock, when each of its holds began (acquire returned) and ended
//! (release called), writes them to a file, and the section merges the files into one
//! timeline. A hand-over is the gap from one hold's end to the next hold's start, whoever
//! holds next; a cross-process hand-over is one where the next holder is another process.

use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::Result;

/// Nanoseconds on `CLOCK_MONOTONIC`, which every process on the host shares.
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// One worker's holds as `[began, ended]`, written as little-endian u64s.
pub fn write(path: &Path, holds: &[[u64; 2]]) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    for hold in holds {
        out.write_all(&hold[0].to_le_bytes())?;
        out.write_all(&hold[1].to_le_bytes())?;
    }
    out.flush()?;
    Ok(())
}

pub fn read(path: &Path) -> Result<Vec<[u64; 2]>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    let number = |at: &[u8]| u64::from_le_bytes(at.try_into().expect("8 bytes"));
    Ok(bytes.chunks_exact(16).map(|hold| [number(&hold[..8]), number(&hold[8..])]).collect())
}

/// Median hand-overs of a merged timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handoffs {
    /// Every hand-over, a process taking the lock back from itself included.
    pub all_p50: Option<Duration>,
    /// Only those where another process took it next.
    pub cross_p50: Option<Duration>,
    pub cross_count: usize,
}

impl Handoffs {
    /// From each worker's holds (in any order), merged by start time.
    pub fn of(per_worker: &[Vec<[u64; 2]>]) -> Handoffs {
        let mut holds: Vec<(u64, u64, usize)> = per_worker
            .iter()
            .enumerate()
            .flat_map(|(worker, holds)| holds.iter().map(move |[began, ended]| (*began, *ended, worker)))
            .collect();
        holds.sort_unstable();
        let (mut all, mut cross) = (Vec::new(), Vec::new());
        for pair in holds.windows(2) {
            let ((_, ended, before), (began, _, after)) = (pair[0], pair[1]);
            let gap = began.saturating_sub(ended);
            all.push(gap);
            if before != after {
                cross.push(gap);
            }
        }
        Handoffs { all_p50: median(&mut all), cross_p50: median(&mut cross), cross_count: cross.len() }
    }
}

fn median(gaps: &mut [u64]) -> Option<Duration> {
    if gaps.is_empty() {
        return None;
    }
    let middle = (gaps.len() - 1) / 2;
    Some(Duration::from_nanos(*gaps.select_nth_unstable(middle).1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_overs_are_gaps_between_consecutive_holds() {
        // Worker 0 holds 0-10 and 12-20; worker 1 holds 25-30: gaps 2 (same process), 5 (cross).
        let handoffs = Handoffs::of(&[vec![[12, 20], [0, 10]], vec![[25, 30]]]);
        assert_eq!(handoffs.all_p50, Some(Duration::from_nanos(2)));
        assert_eq!(handoffs.cross_p50, Some(Duration::from_nanos(5)));
        assert_eq!(handoffs.cross_count, 1);
        assert_eq!(Handoffs::of(&[vec![[0, 1]]]).all_p50, None);
    }

    #[test]
    fn holds_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("holds");
        write(&path, &[[1, 2], [u64::MAX, 7]]).unwrap();
        assert_eq!(read(&path).unwrap(), vec![[1, 2], [u64::MAX, 7]]);
    }
}
