//! One controller per id. A controller's id lives in its data directory (`controller-id`); a data
//! directory copied to start a second controller carries the first one's id, and the two would then
//! take the sequencing lease from each other at every beat. At start, a controller whose id beat
//! lately waits two beats: if the id beats again meanwhile, another live process has it, and this one
//! refuses to start, saying why. (A controller restarted within seconds of its own death only waits.)

use super::{BEAT_EVERY, LIVE_WITHIN};
use crate::clock::now_ms;
use crate::store::{Store, StoreError};
use std::time::Duration;

/// Why a controller may not start with its id.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Another live controller beats with the same id.
    #[error(
        "another controller with this controller's id ({id}, from the data directory's controller-id) is running at {url}: \
         a data directory copied to start another controller carries the first one's id; remove controller-id \
         from this one's data directory (a new id is made at start) and start it again"
    )]
    Taken {
        /// The id.
        id: String,
        /// The other controller's URL.
        url: String,
    },
    /// The database could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Refuses to go on while another live process beats with `id` (see the module's text); `pause` waits
/// (a thread sleep at start).
pub fn check_unique(
    store: &dyn Store,
    id: &str,
    pause: impl Fn(Duration),
) -> Result<(), IdentityError> {
    let seen = |store: &dyn Store| -> Result<Option<(i64, String)>, StoreError> {
        Ok(store
            .controllers()?
            .into_iter()
            .find(|c| c.id == id)
            .map(|c| (c.seen_ms, c.url)))
    };
    let Some((before, _)) = seen(store)? else {
        return Ok(());
    };
    let live_ms = i64::try_from(LIVE_WITHIN.as_millis()).unwrap_or(i64::MAX);
    if now_ms().saturating_sub(before) > live_ms {
        return Ok(());
    }
    pause(BEAT_EVERY * 3);
    match seen(store)? {
        Some((after, url)) if after > before => Err(IdentityError::Taken {
            id: id.to_string(),
            url,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::ControllerBeat;

    fn beat(store: &dyn Store, id: &str, at: i64) {
        store
            .beat_controller(&ControllerBeat {
                id: id.into(),
                name: "ctl-a".into(),
                url: "https://ctl-a.example:7443".into(),
                started_ms: at,
                now_ms: at,
                agents: 0,
            })
            .unwrap();
    }

    /// A fresh id, or one silent for long, starts at once; one that beat lately waits, then starts
    /// when nothing beat again (its own dead process), and is refused, naming why, when something did.
    #[test]
    fn an_id_another_live_controller_beats_with_is_refused() {
        let store = SqliteStore::in_memory().unwrap();
        let never = |_: Duration| panic!("no wait for an id nobody beats with");
        check_unique(&store, "a1", never).unwrap();
        beat(&store, "old", now_ms() - 60_000);
        check_unique(&store, "old", never).unwrap();

        beat(&store, "a1", now_ms());
        check_unique(&store, "a1", |_| {}).expect("its own earlier process, dead");
        let err = check_unique(&store, "a1", |_| beat(&store, "a1", now_ms() + 1_000))
            .expect_err("another process beats");
        let said = err.to_string();
        assert!(
            said.contains("controller-id") && said.contains("https://ctl-a.example:7443"),
            "{said}"
        );
    }
}
