//! Several controllers, one at a time. The agent talks to the *current* controller (at first the first
//! of the list); when a request to it fails in a way that says the controller (not the request) is the
//! trouble — the connection cannot be made or breaks (refused, reset, TLS failure, timeout) or the answer
//! is 502, 503 or 504 — the next one in the list becomes current (round robin) and the caller retries
//! under its usual backoff. A controller that works is kept: nothing moves back to the first.
//!
//! Every clone of a [`crate::transport::Controller`] shares one [`Failover`], so the poll loop, the
//! sender, heartbeats, the gate and file downloads all follow the same switch. When several requests to
//! the same controller fail together, the first failure moves on and the others find the controller
//! already changed: one switch, not one per request. A request still waiting on a controller the agent
//! has left (a long poll to a host that lost power waits for its timeout) is abandoned at the switch
//! ([`Failover::left`]), so its caller retries on the new one at once.

use super::client::TransportError;
use tokio::sync::watch;

/// The controller a request went to: its place in the list and its base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its index in the list.
    pub index: usize,
    /// Its base URL.
    pub base: reqwest::Url,
}

/// The list of controllers and which one is current.
#[derive(Debug)]
pub struct Failover {
    bases: Vec<reqwest::Url>,
    /// The current controller's index; watched by requests under way.
    current: watch::Sender<usize>,
}

impl Failover {
    /// Controllers in order of preference; the first is current. `bases` is never empty (the
    /// configuration requires one); an empty list is given one placeholder that fails every request.
    pub fn new(bases: Vec<reqwest::Url>) -> Failover {
        let bases = if bases.is_empty() {
            // A URL that parses by construction and that nothing answers (RFC 6761's `.invalid`).
            vec![reqwest::Url::parse("https://controller.invalid").expect("a valid literal URL")]
        } else {
            bases
        };
        Failover {
            bases,
            current: watch::Sender::new(0),
        }
    }

    /// How many controllers there are.
    pub fn len(&self) -> usize {
        self.bases.len()
    }

    /// Always false: there is at least one controller.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The controller requests go to now.
    pub fn current(&self) -> Target {
        let index = *self.current.borrow() % self.bases.len();
        Target {
            index,
            base: self.bases[index].clone(),
        }
    }

    /// Notes how a request to `target` ended: a failure that is the controller's moves on to the next
    /// controller, unless another request already moved on from `target`. Returns the controller
    /// switched to, if this call switched.
    pub fn settle<T>(&self, target: &Target, result: &Result<T, TransportError>) -> Option<Target> {
        let Err(error) = result else { return None };
        if self.bases.len() < 2 || !fails_over(error) {
            return None;
        }
        let next = (target.index + 1) % self.bases.len();
        // Moves on only from `target` (atomically, under the channel's lock): a request that went to a
        // controller the agent already left changes nothing.
        let moved = self.current.send_if_modified(|current| {
            if *current == target.index {
                *current = next;
                true
            } else {
                false
            }
        });
        if !moved {
            return None;
        }
        tracing::warn!(
            from = %target.base,
            to = %self.bases[next],
            reason = %error,
            "controller {} failed; switching to controller {}",
            target.base,
            self.bases[next]
        );
        Some(Target {
            index: next,
            base: self.bases[next].clone(),
        })
    }

    /// Completes when `target` is no longer the current controller (at once if it is not).
    pub async fn left(&self, target: &Target) {
        let mut changes = self.current.subscribe();
        // The sender lives in `self`, which outlives this borrow: the channel cannot close here.
        let _ = changes.wait_for(|current| *current != target.index).await;
    }
}

/// Whether an error says the controller cannot serve (so another should be tried): a connection that
/// could not be made or broke, or a 502, 503 or 504. Anything else (401, 404, 4xx, an answer too large
/// or unreadable) is an answer about the request, which another controller would give alike.
pub fn fails_over(error: &TransportError) -> bool {
    match error {
        TransportError::Network(_) => true,
        TransportError::Api { status, .. } => matches!(status, 502..=504),
        TransportError::Unauthorized
        | TransportError::TooLarge { .. }
        | TransportError::Decode(_)
        | TransportError::Random(_)
        | TransportError::Local(_)
        | TransportError::Tls(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: &[&str]) -> Vec<reqwest::Url> {
        list.iter()
            .map(|u| reqwest::Url::parse(u).unwrap())
            .collect()
    }

    fn api(status: u16) -> Result<(), TransportError> {
        Err(TransportError::Api {
            status,
            code: String::new(),
            message: String::new(),
        })
    }

    fn network() -> Result<(), TransportError> {
        Err(TransportError::Network("connection refused".into()))
    }

    #[test]
    fn which_failures_move_on() {
        for status in [502, 503, 504] {
            assert!(fails_over(&api(status).unwrap_err()), "{status}");
        }
        for status in [400, 404, 409, 413, 422, 500, 501, 505] {
            assert!(!fails_over(&api(status).unwrap_err()), "{status}");
        }
        assert!(fails_over(&network().unwrap_err()));
        assert!(!fails_over(&TransportError::Unauthorized));
        assert!(!fails_over(&TransportError::Decode("x".into())));
        assert!(!fails_over(&TransportError::Local("disk full".into())));
        assert!(!fails_over(&TransportError::TooLarge { limit: 1, size: 2 }));
    }

    #[test]
    fn failures_go_round_the_list_and_success_stays() {
        let f = Failover::new(urls(&["https://a:1", "https://b:2", "https://c:3"]));
        assert_eq!(f.current().base.as_str(), "https://a:1/");
        let a = f.current();
        assert_eq!(f.settle(&a, &network()).map(|t| t.index), Some(1));
        let b = f.current();
        assert_eq!(b.base.as_str(), "https://b:2/");
        // Success, a 204-like Ok, and answers about the request keep the controller.
        assert_eq!(f.settle(&b, &Ok(())), None);
        assert_eq!(f.settle(&b, &api(404)), None);
        assert_eq!(f.settle::<()>(&b, &Err(TransportError::Unauthorized)), None);
        assert_eq!(f.current(), b);
        assert_eq!(f.settle(&b, &api(503)).map(|t| t.index), Some(2));
        let c = f.current();
        // Round robin: after the last comes the first.
        assert_eq!(f.settle(&c, &api(504)).map(|t| t.index), Some(0));
    }

    #[test]
    fn failures_seen_together_switch_once() {
        let f = Failover::new(urls(&["https://a:1", "https://b:2", "https://c:3"]));
        let a = f.current();
        // Three requests went to `a` and all fail: only the first moves on.
        assert!(f.settle(&a, &network()).is_some());
        assert!(f.settle(&a, &network()).is_none());
        assert!(f.settle(&a, &api(502)).is_none());
        assert_eq!(f.current().index, 1);
    }

    #[tokio::test]
    async fn requests_under_way_learn_that_the_agent_left_their_controller() {
        let f = std::sync::Arc::new(Failover::new(urls(&["https://a:1", "https://b:2"])));
        let a = f.current();
        let waiting = {
            let (f, a) = (f.clone(), a.clone());
            tokio::spawn(async move { f.left(&a).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "a is still current");
        f.settle(&a, &network());
        // Completes now (the generous bound only keeps a broken build from hanging).
        tokio::time::timeout(std::time::Duration::from_secs(60), waiting)
            .await
            .expect("the switch wakes the request")
            .unwrap();
        // For a controller already left, at once.
        tokio::time::timeout(std::time::Duration::from_secs(60), f.left(&a))
            .await
            .expect("already left");
    }

    #[test]
    fn one_controller_never_switches() {
        let f = Failover::new(urls(&["https://a:1"]));
        let a = f.current();
        assert!(f.settle(&a, &network()).is_none());
        assert_eq!(f.current(), a);
        assert_eq!(f.len(), 1);
    }
}
