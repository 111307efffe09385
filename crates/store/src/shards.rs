//! Where an instance's rows live: the `shard_key` every instance-owned row carries (ADR 0014).
//!
//! On plain PostgreSQL every key is 0: one bucket, and the statements' `shard_key = $n` is
//! always true. On Citus (`WORKFLOW_BACKEND_CITUS=true`) the tables of instances are
//! distributed by it over [`BUCKETS`] shards, and each bucket's key is a value Citus hashes
//! into that bucket's shard ([`REPRESENTATIVES`]), so that buckets and shards correspond one
//! to one. An instance's bucket is written in its id (`id mod BUCKETS`), so any statement that
//! names an instance computes the key from the id alone; a message's bucket comes from its
//! correlation value, and an instance that a message starts takes the message's bucket, so
//! that the start and the later correlations with the same value are single-shard.
//!
//! Which of the two the database is holds for the life of the process (the service checks it
//! at start, before anything is written): [`distribute`] is called once, by the start-up, when
//! the database is a Citus cluster's.

use std::sync::atomic::{AtomicBool, Ordering};
use workflow_types::InstanceId;

/// Buckets (and shards of each distributed table) on Citus.
pub const BUCKETS: i64 = 32;

/// For each bucket, in the order of its shard's hash range, the smallest non-negative integer
/// Citus hashes into that shard of a table distributed by an `integer` column over
/// [`BUCKETS`] shards (`get_shard_id_for_distribution_column`; `tests/citus/run` checks them).
pub const REPRESENTATIVES: [i32; BUCKETS as usize] = [
    8, 1, 31, 24, 10, 48, 5, 50, 4, 17, 16, 85, 36, 0, 37, 3, 52, 62, 136, 28, 6, 21, 39, 13, 2,
    27, 58, 41, 9, 22, 11, 18,
];

/// The key of one bucket's rows, bound wherever a statement names instance-owned rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, sqlx::Type)]
#[sqlx(transparent)]
#[serde(transparent)]
pub struct ShardKey(pub i32);

/// The key of plain PostgreSQL's one bucket.
const SINGLE: [ShardKey; 1] = [ShardKey(0)];

static DISTRIBUTED: AtomicBool = AtomicBool::new(false);

/// From now on, keys are Citus buckets' (called once at start, before any row is written).
pub fn distribute() {
    DISTRIBUTED.store(true, Ordering::SeqCst);
}

/// Whether the tables of instances are distributed (a Citus cluster).
pub fn distributed() -> bool {
    DISTRIBUTED.load(Ordering::Relaxed)
}

/// Every bucket's key on Citus.
const KEYS: [ShardKey; BUCKETS as usize] = {
    let mut keys = [ShardKey(0); BUCKETS as usize];
    let mut bucket = 0;
    while bucket < keys.len() {
        keys[bucket] = ShardKey(REPRESENTATIVES[bucket]);
        bucket += 1;
    }
    keys
};

fn key_of_bucket(bucket: i64) -> ShardKey {
    if distributed() {
        KEYS[bucket.rem_euclid(BUCKETS) as usize]
    } else {
        SINGLE[0]
    }
}

/// The key of an instance's rows (and of everything that belongs to it).
pub fn of_instance(id: InstanceId) -> ShardKey {
    key_of_bucket(id.0)
}

/// The bucket of a message's canonical correlation value (FNV-1a: the same on every replica
/// and every build).
pub fn bucket_of_value(value: &str) -> i64 {
    let hash = value.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    (hash % BUCKETS as u64) as i64
}

/// The key of the rows a message with this canonical correlation value is looked up by.
pub fn of_value(value: &str) -> ShardKey {
    key_of_bucket(bucket_of_value(value))
}

/// The key of a bucket's rows.
pub fn of_bucket(bucket: i64) -> ShardKey {
    key_of_bucket(bucket)
}

/// The canonical text of no correlation values (a message that names no property).
const NO_VALUES: &str = "{}";

/// The bucket of a message's correlation values (`canonical`), if it has any: where the
/// receives waiting for them are looked up, and where an instance it starts goes.
pub fn bucket_of_values(canonical: &str) -> Option<i64> {
    (canonical != NO_VALUES).then(|| bucket_of_value(canonical))
}

/// The bucket of a message with an idempotency uuid: its row goes there, so that a retry finds
/// it whatever its payload (a uuid is unique across buckets only because each has one bucket).
pub fn bucket_of_uuid(uuid: uuid::Uuid) -> i64 {
    bucket_of_value(&uuid.to_string())
}

/// Where a sent message's row goes: the bucket of its uuid, else of its values, else none
/// (anywhere).
pub fn bucket_of_message(canonical: &str, uuid: Option<uuid::Uuid>) -> Option<i64> {
    uuid.map(bucket_of_uuid)
        .or_else(|| bucket_of_values(canonical))
}

/// Every key rows can have: claims that must lock rows (`FOR UPDATE SKIP LOCKED`) run once
/// per key, since Citus locks rows only in single-shard statements.
pub fn all() -> &'static [ShardKey] {
    if distributed() {
        &KEYS
    } else {
        &SINGLE
    }
}

/// How a new instance's id is made from its sequence's next value `n`: `n × scale + offset`,
/// with `key` its rows' key. On plain PostgreSQL the id is `n` itself; on Citus it carries the
/// bucket (`n × BUCKETS + bucket`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewInstanceId {
    pub scale: i64,
    pub offset: i64,
    pub key: ShardKey,
}

/// Where a new instance goes: `bucket` when it belongs with something already placed (the
/// message that starts it), else `fresh`, a bucket of its own (any value: taken modulo
/// [`BUCKETS`]).
pub fn new_instance(bucket: Option<i64>, fresh: i64) -> NewInstanceId {
    if distributed() {
        let bucket = bucket.unwrap_or(fresh).rem_euclid(BUCKETS);
        NewInstanceId {
            scale: BUCKETS,
            offset: bucket,
            key: key_of_bucket(bucket),
        }
    } else {
        NewInstanceId {
            scale: 1,
            offset: 0,
            key: SINGLE[0],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_representative_per_bucket() {
        let mut seen = REPRESENTATIVES.to_vec();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), BUCKETS as usize);
    }

    #[test]
    fn buckets_of_values_are_stable_and_spread() {
        assert_eq!(
            bucket_of_value(r#"{"order_id":"A-17"}"#),
            bucket_of_value(r#"{"order_id":"A-17"}"#)
        );
        let buckets: std::collections::HashSet<i64> = (0..1000)
            .map(|i| bucket_of_value(&format!("order-{i}")))
            .collect();
        assert_eq!(buckets.len(), BUCKETS as usize);
        // written once: a change of the hash moves every stored instance's messages
        assert_eq!(bucket_of_value(""), (0xcbf2_9ce4_8422_2325_u64 % 32) as i64);
    }

    #[test]
    fn plain_postgres_has_one_key_and_unchanged_ids() {
        // (the tests of this crate never call `distribute`)
        assert_eq!(of_instance(InstanceId(77)), ShardKey(0));
        assert_eq!(of_value("x"), ShardKey(0));
        assert_eq!(all(), &[ShardKey(0)]);
        let id = new_instance(Some(5), 9);
        assert_eq!((id.scale, id.offset, id.key), (1, 0, ShardKey(0)));
    }
}
