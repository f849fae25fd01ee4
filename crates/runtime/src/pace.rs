//! The one loop every controller of the project runs (the installer, the deployer, each controller
//! of the controllers pod): wait until something wakes it or its timer is due, let a burst of
//! wake-ups pass, run one pass, sleep as long as the pass says; stop between passes, never inside one.
//!
//! Hand-written rather than kube-runtime's `Controller`, which reconciles objects by key: each of
//! these loops reconciles one job that no single object is the key of. The installer plans every
//! provider together (CRD names claimed across providers, one status), the deployer derives one
//! Deployment from a ConfigMap and from `ClusterAPI/cluster` (a kind that may not be served, which
//! `Controller`'s watches cannot wait for), and a controller of the controllers pod writes its
//! conditions on the one ClusterOperator. What they share — coalescing, the next wake-up, telling a
//! pass what woke it, shutting down — is here, once; what a pass does with a failure (backoff,
//! degrading) stays with the pass, which returns when to look again. After each pass, and once more
//! when quiet for [`RELEASE_AFTER`], a loop hands back the heap pages its pass freed
//! ([`crate::memory::release_free`]).

use std::future::Future;
use std::time::Duration;

use tokio::sync::Notify;

/// How many wake-ups a loop may have: [`Woken`] tells them apart by one bit each.
pub const MAX_WAKES: usize = u64::BITS as usize;

/// How long a loop waits quiet before it hands back, a second time, the heap pages its pass freed
/// ([`crate::memory`]): the pass's last frees (the watch events of its writes, the blocking pool's
/// work) come after the pass, within this time.
pub const RELEASE_AFTER: Duration = Duration::from_secs(2);

/// What a pass is for: the wake-ups that rang since the last pass (by their index in the slice given
/// to [`run`]), and whether the pass's own timer was due.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Woken {
    rang: u64,
    timer: bool,
}

impl Woken {
    /// Whether wake-up `index` (its place in [`run`]'s slice) rang.
    pub fn by(&self, index: usize) -> bool {
        index < MAX_WAKES && self.rang & (1 << index) != 0
    }

    /// Whether the delay the last pass asked for ran out (the first pass counts as due).
    pub fn timer(&self) -> bool {
        self.timer
    }

    fn rung(&mut self, index: usize) {
        self.rang |= 1 << index;
    }
}

/// How long to let wake-ups gather before a pass: an apply of 30 objects echoes 30 watch events, one
/// pass sees them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coalesce {
    /// The pass starts once no wake-up came for this long...
    pub quiet: Duration,
    /// ...or this long after the first, whichever comes first.
    pub at_most: Duration,
}

impl Coalesce {
    /// No gathering: the pass starts at once.
    pub const NONE: Coalesce = Coalesce {
        quiet: Duration::ZERO,
        at_most: Duration::ZERO,
    };
}

/// One pass of a loop.
pub trait Pass: Send {
    /// Does the work, and says how long until the next pass if nothing wakes the loop before.
    fn pass(&mut self, woken: Woken) -> impl Future<Output = Duration> + Send;
}

/// Runs `pass` at once, then whenever one of `wakes` (at most [`MAX_WAKES`]) is notified or the delay
/// the last pass returned runs out, until `shutdown` resolves. A pass under way when it does is
/// finished first.
pub async fn run<P: Pass>(
    wakes: &[&Notify],
    coalesce: Coalesce,
    shutdown: impl Future<Output = ()>,
    mut pass: P,
) {
    assert!(
        wakes.len() <= MAX_WAKES,
        "{} wake-ups: a pass tells at most {MAX_WAKES} apart",
        wakes.len()
    );
    let mut shutdown = std::pin::pin!(shutdown);
    let mut woken = Woken {
        rang: 0,
        timer: true,
    };
    'passes: loop {
        let delay = pass.pass(woken).await;
        crate::memory::release_free();
        woken = Woken::default();
        let due = tokio::time::Instant::now() + delay;
        let mut released = false;
        loop {
            tokio::select! {
                // A shutdown goes first, then what woke the loop before its timer.
                biased;
                () = &mut shutdown => break 'passes,
                index = any(wakes) => woken.rung(index),
                () = tokio::time::sleep_until(due) => woken.timer = true,
                () = tokio::time::sleep(RELEASE_AFTER), if !released => {
                    crate::memory::release_free();
                    released = true;
                    continue;
                }
            }
            break;
        }
        let burst = tokio::time::Instant::now();
        while burst.elapsed() < coalesce.at_most {
            match tokio::time::timeout(coalesce.quiet, any(wakes)).await {
                Ok(index) => woken.rung(index),
                Err(_) => break,
            }
        }
    }
}

/// The index of the first of `wakes` notified; never, for none.
async fn any(wakes: &[&Notify]) -> usize {
    if wakes.is_empty() {
        return std::future::pending().await;
    }
    // A notification given to a future dropped here unfinished is passed on by tokio (to another
    // waiter, or kept for the next), so none is lost.
    futures::future::select_all(wakes.iter().map(|w| Box::pin(w.notified())))
        .await
        .1
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// Records what each pass was woken for; stops the loop after `passes` passes.
    struct Recorder {
        seen: Vec<Woken>,
        passes: usize,
        done: Arc<Notify>,
        delay: Duration,
    }

    impl Pass for Recorder {
        async fn pass(&mut self, woken: Woken) -> Duration {
            self.seen.push(woken);
            if self.seen.len() == self.passes {
                self.done.notify_one();
            }
            self.delay
        }
    }

    fn recorder(passes: usize, delay: Duration) -> (Recorder, Arc<Notify>) {
        let done = Arc::new(Notify::new());
        let recorder = Recorder {
            seen: Vec::new(),
            passes,
            done: done.clone(),
            delay,
        };
        (recorder, done)
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_wake_ups_makes_one_pass_that_names_them() {
        let (inputs, objects) = (Notify::new(), Notify::new());
        let (mut recorder, _) = recorder(usize::MAX, Duration::from_secs(3600));
        let coalesce = Coalesce {
            quiet: Duration::from_millis(40),
            at_most: Duration::from_millis(200),
        };
        let shutdown = Notify::new();
        let wakes = [&inputs, &objects];
        let driver = async {
            // The first pass runs at once; then a burst of both kinds, spread over 90 ms.
            tokio::time::sleep(Duration::from_millis(10)).await;
            objects.notify_one();
            tokio::time::sleep(Duration::from_millis(30)).await;
            objects.notify_one();
            tokio::time::sleep(Duration::from_millis(30)).await;
            inputs.notify_one();
            tokio::time::sleep(Duration::from_secs(1)).await;
            shutdown.notify_one();
        };
        tokio::join!(
            run(&wakes, coalesce, shutdown.notified(), &mut recorder),
            driver
        );
        let expected = Woken {
            rang: 0b11,
            timer: false,
        };
        assert_eq!(
            recorder.seen,
            [Woken::default().with_timer(), expected],
            "one pass at the start, one for the whole burst"
        );
        assert!(expected.by(0) && expected.by(1) && !expected.by(2));
    }

    #[tokio::test(start_paused = true)]
    async fn the_delay_a_pass_returns_is_the_next_timer() {
        let wake = Notify::new();
        let (mut recorder, done) = recorder(3, Duration::from_secs(30));
        let started = tokio::time::Instant::now();
        run(&[&wake], Coalesce::NONE, done.notified(), &mut recorder).await;
        // Two timers of 30 s each after the first pass; the shutdown rang during the third pass and
        // stops the loop before a fourth.
        assert_eq!(started.elapsed(), Duration::from_secs(60));
        assert_eq!(recorder.seen, [Woken::default().with_timer(); 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wake_up_during_a_pass_makes_another() {
        let wake = Arc::new(Notify::new());
        struct RingsDuringFirst {
            wake: Arc<Notify>,
            seen: Vec<Woken>,
            done: Arc<Notify>,
        }
        impl Pass for RingsDuringFirst {
            async fn pass(&mut self, woken: Woken) -> Duration {
                if self.seen.is_empty() {
                    self.wake.notify_one();
                }
                self.seen.push(woken);
                if self.seen.len() == 2 {
                    self.done.notify_one();
                }
                Duration::from_secs(3600)
            }
        }
        let done = Arc::new(Notify::new());
        let mut pass = RingsDuringFirst {
            wake: wake.clone(),
            seen: Vec::new(),
            done: done.clone(),
        };
        run(&[&wake], Coalesce::NONE, done.notified(), &mut pass).await;
        assert_eq!(
            pass.seen[1],
            Woken {
                rang: 1,
                timer: false
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_waits_for_the_pass_under_way() {
        struct Slow(Arc<AtomicU32>);
        impl Pass for Slow {
            async fn pass(&mut self, _: Woken) -> Duration {
                tokio::time::sleep(Duration::from_secs(5)).await;
                self.0.fetch_add(1, Ordering::SeqCst);
                Duration::ZERO
            }
        }
        let finished = Arc::new(AtomicU32::new(0));
        let shutdown = tokio::time::sleep(Duration::from_secs(1));
        run(&[], Coalesce::NONE, shutdown, Slow(finished.clone())).await;
        assert_eq!(
            finished.load(Ordering::SeqCst),
            1,
            "the first pass ran to its end"
        );
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "65 wake-ups")]
    async fn more_wake_ups_than_a_pass_tells_apart_are_refused() {
        let notifies: Vec<Notify> = (0..=MAX_WAKES).map(|_| Notify::new()).collect();
        let wakes: Vec<&Notify> = notifies.iter().collect();
        let (recorder, done) = recorder(1, Duration::ZERO);
        run(&wakes, Coalesce::NONE, done.notified(), recorder).await;
    }

    impl Woken {
        fn with_timer(mut self) -> Woken {
            self.timer = true;
            self
        }
    }

    impl<P: Pass> Pass for &mut P {
        fn pass(&mut self, woken: Woken) -> impl Future<Output = Duration> + Send {
            (**self).pass(woken)
        }
    }
}
