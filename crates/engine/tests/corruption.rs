//! Damaged files: a torn log tail is cut and everything before it survives;
//! damage anywhere else (inside the log, in a checkpoint data or delta file,
//! in the manifest) stops `Engine::open` with a corruption error naming the
//! file, and nothing is silently skipped.
//!
//! Each scenario builds a data directory once with a cleanly closed engine,
//! then damages fresh copies of it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

const SEGMENT_HEADER_LEN: usize = 28;
const FRAME_HEADER_LEN: usize = 20;

fn config(dir: &Path) -> EngineConfig {
    let mut config = EngineConfig::durable(dir);
    // No background checkpoints: the tests decide what the files hold.
    config.checkpoint_log_bytes = 0;
    config
}

fn row(id: i64, v: &str) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(v.as_bytes())])
}

fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn create(e: &Engine) -> Arc<Table> {
    e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap()
}

fn insert(e: &Engine, t: &Arc<Table>, id: i64, v: &str) {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(t, row(id, v)).unwrap();
    tx.commit().unwrap();
}

/// The table's rows as (id, value), in key order.
fn contents(e: &Engine) -> Vec<(i64, String)> {
    let t = e.table("t").expect("table t exists");
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let rows = tx.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap();
    tx.commit().unwrap();
    rows.iter()
        .map(|r| {
            let t = Tuple::parse(r).unwrap();
            let id = decode_i64(t.field(0).unwrap()).unwrap();
            (id, String::from_utf8(t.field(1).unwrap().to_vec()).unwrap())
        })
        .collect()
}

fn expect_rows(ids: impl IntoIterator<Item = i64>) -> Vec<(i64, String)> {
    ids.into_iter().map(|i| (i, format!("v{i}"))).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

fn segments(data_dir: &Path) -> Vec<PathBuf> {
    sorted_files(&data_dir.join("log")).into_iter().filter(|p| p.extension().is_some_and(|x| x == "log")).collect()
}

/// (file offset, total length) of every record frame in a segment file.
fn frames(path: &Path) -> Vec<(usize, usize)> {
    let bytes = fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut pos = SEGMENT_HEADER_LEN;
    while pos < bytes.len() {
        let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        out.push((pos, FRAME_HEADER_LEN + len));
        pos += FRAME_HEADER_LEN + len;
    }
    assert_eq!(pos, bytes.len(), "{} ends in a whole frame", path.display());
    out
}

fn flip(path: &Path, offset: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset] ^= 0x5A;
    fs::write(path, bytes).unwrap();
}

fn truncate(path: &Path, len: usize) {
    fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len as u64).unwrap();
}

fn open_err(dir: &Path) -> EngineError {
    match Engine::open(config(dir)) {
        Ok(e) => panic!("open succeeded on damaged files holding {:?}", contents(&e)),
        Err(err) => err,
    }
}

/// The error is a corruption error whose message names `file` and says corrupt.
fn assert_corruption_naming(err: &EngineError, file: &Path) {
    let msg = err.to_string();
    assert_eq!(err.class(), ErrorClass::Corruption, "{msg}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(msg.contains(name), "error should name {name}: {msg}");
    assert!(msg.contains("corrupt"), "error should say corrupt: {msg}");
}

// ----- log damage -----

const LOG_ROWS: i64 = 20;

/// A directory whose log holds the table creation and `LOG_ROWS` one-row
/// commits, the last of them (row LOG_ROWS - 1) in the last frame.
fn log_fixture(segment_bytes: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.segment_bytes = segment_bytes;
    let e = Engine::open(cfg).unwrap();
    let t = create(&e);
    for i in 0..LOG_ROWS {
        insert(&e, &t, i, &format!("v{i}"));
    }
    e.close().unwrap();
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(contents(&e), expect_rows(0..LOG_ROWS));
    drop(e);
    dir
}

/// After damage to the last record: open succeeds, the last transaction is
/// gone, the earlier ones are there, the damaged bytes are cut from the
/// file, and new commits survive another restart.
fn assert_tail_cut(dir: &Path, last_segment: &Path, frame_offset: usize, what: &str) {
    let e = Engine::open(config(dir)).unwrap_or_else(|err| panic!("{what}: open failed: {err}"));
    assert_eq!(contents(&e), expect_rows(0..LOG_ROWS - 1), "{what}");
    assert_eq!(fs::metadata(last_segment).unwrap().len(), frame_offset as u64, "{what}: the torn tail is cut");
    let t = e.table("t").unwrap();
    insert(&e, &t, 1000, "v1000");
    insert(&e, &t, LOG_ROWS - 1, &format!("v{}", LOG_ROWS - 1));
    drop(e);
    let e = Engine::open(config(dir)).unwrap_or_else(|err| panic!("{what}: second open failed: {err}"));
    let mut expected = expect_rows(0..LOG_ROWS);
    expected.push((1000, "v1000".into()));
    assert_eq!(contents(&e), expected, "{what}: after the second restart");
}

#[test]
fn flipped_bytes_in_the_last_record_are_a_torn_tail() {
    let fixture = log_fixture(64 << 20);
    let segs = segments(fixture.path());
    assert_eq!(segs.len(), 1);
    let (offset, len) = *frames(&segs[0]).last().unwrap();
    // Length, checksum, LSN, stream, first/middle/last payload byte.
    for at in [0, 3, 5, 9, 15, 17, FRAME_HEADER_LEN, len / 2, len - 1] {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(fixture.path(), copy.path());
        let seg = segments(copy.path()).pop().unwrap();
        flip(&seg, offset + at);
        assert_tail_cut(copy.path(), &seg, offset, &format!("byte {at} of the last record flipped"));
    }
}

#[test]
fn a_last_record_cut_short_is_a_torn_tail() {
    let fixture = log_fixture(64 << 20);
    let segs = segments(fixture.path());
    let (offset, len) = *frames(&segs[0]).last().unwrap();
    for keep in [1, 8, FRAME_HEADER_LEN - 1, FRAME_HEADER_LEN, FRAME_HEADER_LEN + 1, len / 2, len - 1] {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(fixture.path(), copy.path());
        let seg = segments(copy.path()).pop().unwrap();
        truncate(&seg, offset + keep);
        assert_tail_cut(copy.path(), &seg, offset, &format!("last record cut after {keep} of {len} bytes"));
    }
}

#[test]
fn a_zero_filled_tail_is_cut_without_losing_records() {
    let fixture = log_fixture(64 << 20);
    let seg = segments(fixture.path()).pop().unwrap();
    let len = fs::metadata(&seg).unwrap().len();
    fs::OpenOptions::new().write(true).open(&seg).unwrap().set_len(len + 4096).unwrap();
    let e = Engine::open(config(fixture.path())).unwrap();
    assert_eq!(contents(&e), expect_rows(0..LOG_ROWS));
    assert_eq!(fs::metadata(&seg).unwrap().len(), len);
    let t = e.table("t").unwrap();
    insert(&e, &t, 1000, "v1000");
    drop(e);
    let e = Engine::open(config(fixture.path())).unwrap();
    let mut expected = expect_rows(0..LOG_ROWS);
    expected.push((1000, "v1000".into()));
    assert_eq!(contents(&e), expected);
}

/// Open fails with a corruption error naming the segment, leaves the files
/// untouched, and keeps failing.
fn assert_mid_log_damage_fails(dir: &Path, seg: &Path, what: &str) {
    let before: Vec<Vec<u8>> = segments(dir).iter().map(|p| fs::read(p).unwrap()).collect();
    for attempt in 0..2 {
        let err = open_err(dir);
        assert_corruption_naming(&err, seg);
        assert!(matches!(err, EngineError::Log(_)), "{what}: {err:?}");
        let after: Vec<Vec<u8>> = segments(dir).iter().map(|p| fs::read(p).unwrap()).collect();
        assert!(before == after, "{what}: a failed open (attempt {attempt}) changed the log files");
    }
}

#[test]
fn damage_inside_the_log_fails_open() {
    let fixture = log_fixture(64 << 20);
    let seg = segments(fixture.path()).pop().unwrap();
    let all = frames(&seg);
    assert_eq!(all.len() as i64, LOG_ROWS + 1);
    // The table creation, a record in the middle, and the last but one.
    for index in [0, all.len() / 2, all.len() - 2] {
        let (offset, len) = all[index];
        for at in [0, 5, 9, len - 1] {
            let copy = tempfile::tempdir().unwrap();
            copy_dir(fixture.path(), copy.path());
            let seg = segments(copy.path()).pop().unwrap();
            flip(&seg, offset + at);
            assert_mid_log_damage_fails(copy.path(), &seg, &format!("byte {at} of record {index} flipped"));
        }
    }
}

#[test]
fn damage_at_the_end_of_an_earlier_segment_fails_open() {
    let fixture = log_fixture(512);
    let segs = segments(fixture.path());
    assert!(segs.len() >= 3, "{segs:?}");
    for victim in [0, segs.len() - 2] {
        let (offset, len) = *frames(&segs[victim]).last().unwrap();
        // A flipped byte, and a segment cut short (as if a crash had torn it).
        for cut in [false, true] {
            let copy = tempfile::tempdir().unwrap();
            copy_dir(fixture.path(), copy.path());
            let seg = segments(copy.path())[victim].clone();
            if cut {
                truncate(&seg, offset + len / 2);
            } else {
                flip(&seg, offset + len - 1);
            }
            assert_mid_log_damage_fails(copy.path(), &seg, &format!("segment {victim} damaged (cut: {cut})"));
        }
    }
}

#[test]
fn a_damaged_segment_header_fails_open() {
    let fixture = log_fixture(512);
    let n = segments(fixture.path()).len();
    for victim in [0, n - 1] {
        for at in [0, 8, 16, 24] {
            let copy = tempfile::tempdir().unwrap();
            copy_dir(fixture.path(), copy.path());
            let seg = segments(copy.path())[victim].clone();
            flip(&seg, at);
            assert_mid_log_damage_fails(copy.path(), &seg, &format!("byte {at} of the header of segment {victim}"));
        }
    }
}

/// Log segments that vanished: a gap between segments, or the segments a
/// checkpoint still needs, is reported as corruption, never skipped.
#[test]
fn missing_log_segments_fail_open() {
    let fixture = log_fixture(512);
    let segs = segments(fixture.path());
    assert!(segs.len() >= 3, "{segs:?}");
    // A segment in the middle: the next one does not start where the log ends.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(fixture.path(), copy.path());
    let gone = segments(copy.path())[1].clone();
    fs::remove_file(&gone).unwrap();
    let err = open_err(copy.path());
    assert_corruption_naming(&err, &segments(copy.path())[1]);
    assert!(err.to_string().contains("missing"), "{err}");

    // The segment holding a checkpoint's replay position.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(fixture.path(), copy.path());
    {
        let mut cfg = config(copy.path());
        cfg.segment_bytes = 512;
        let e = Engine::open(cfg).unwrap();
        let t = e.table("t").unwrap();
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.insert(&t, row(500, "v500")).unwrap();
        tx.commit().unwrap();
        e.checkpoint().unwrap();
        for i in 501..520 {
            insert(&e, &t, i, &format!("v{i}"));
        }
    }
    let segs = segments(copy.path());
    assert!(segs.len() >= 2, "{segs:?}");
    fs::remove_file(&segs[0]).unwrap();
    let err = open_err(copy.path());
    assert_eq!(err.class(), ErrorClass::Corruption, "{err}");
    assert!(err.to_string().contains("corrupt"), "{err}");
}

/// Without a checkpoint the log is never truncated, so it must start at LSN
/// 0. If its first segment is gone, replaying from the first remaining one
/// loses the table creation, and every later write to the table is skipped
/// as a write to a dropped table: the engine opens empty.
#[test]
fn a_log_missing_its_first_segment_without_a_checkpoint_fails_open() {
    let fixture = log_fixture(512);
    fs::remove_file(&segments(fixture.path())[0]).unwrap();
    match Engine::open(config(fixture.path())) {
        Ok(e) => panic!("open succeeded without the first log segment: tables {:?}", e.tables()),
        Err(err) => assert_eq!(err.class(), ErrorClass::Corruption, "{err}"),
    }
}

/// The same with a lost checkpoint directory: the log was truncated by a
/// checkpoint that is no longer there, so the rows before it are gone.
#[test]
fn a_truncated_log_without_its_checkpoint_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut cfg = config(dir.path());
        cfg.segment_bytes = 512;
        let e = Engine::open(cfg).unwrap();
        let t = create(&e);
        for i in 0..LOG_ROWS {
            insert(&e, &t, i, &format!("v{i}"));
        }
        e.checkpoint().unwrap();
        for i in LOG_ROWS..2 * LOG_ROWS {
            insert(&e, &t, i, &format!("v{i}"));
        }
        assert!(e.log().unwrap().start_lsn() > 0, "the checkpoint truncated the log");
    }
    fs::remove_dir_all(dir.path().join("checkpoint")).unwrap();
    match Engine::open(config(dir.path())) {
        Ok(e) => panic!("open succeeded without the checkpoint the log depends on: tables {:?}", e.tables()),
        Err(err) => assert_eq!(err.class(), ErrorClass::Corruption, "{err}"),
    }
}

// ----- checkpoint damage -----

/// A directory with two checkpoints (data 1; data 2 and delta 2, no merge)
/// and a log tail, and the rows it holds.
fn checkpoint_fixture() -> (tempfile::TempDir, Vec<(i64, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    let t = create(&e);
    for i in 0..100 {
        insert(&e, &t, i, &format!("v{i}"));
    }
    let first = e.checkpoint().unwrap().unwrap();
    assert_eq!((first.data_rows, first.delta_rows, first.merged), (100, 0, false));
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    for i in 0..10 {
        assert!(tx.update(&t, row(i, &format!("w{i}"))).unwrap());
    }
    for i in 90..95 {
        assert!(tx.delete(&t, &key(i)).unwrap());
    }
    tx.commit().unwrap();
    let second = e.checkpoint().unwrap().unwrap();
    assert_eq!((second.data_rows, second.delta_rows, second.merged), (10, 15, false));
    for i in 200..205 {
        insert(&e, &t, i, &format!("v{i}"));
    }
    drop(e);

    let mut expected: Vec<(i64, String)> = (0..10).map(|i| (i, format!("w{i}"))).collect();
    expected.extend(expect_rows((10..90).chain(95..100).chain(200..205)));
    let names: Vec<String> = sorted_files(&dir.path().join("checkpoint"))
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["MANIFEST-0000000002", "data-0000000001.ckpt", "data-0000000002.ckpt", "delta-0000000002.ckpt"]);
    let e = Engine::open(config(dir.path())).unwrap();
    assert_eq!(contents(&e), expected, "the undamaged fixture recovers");
    drop(e);
    (dir, expected)
}

fn checkpoint_damage(file: &str, damage: impl Fn(&Path, usize), what: &str) {
    let (fixture, _) = checkpoint_fixture();
    let len = fs::metadata(fixture.path().join("checkpoint").join(file)).unwrap().len() as usize;
    // Header (magic, kind, crc), first record, middle, trailer (count, crc).
    for at in [0, 13, 18, 22, 30, len / 2, len - 10, len - 1] {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(fixture.path(), copy.path());
        let path = copy.path().join("checkpoint").join(file);
        damage(&path, at);
        let err = open_err(copy.path());
        assert_corruption_naming(&err, &path);
        assert!(matches!(err, EngineError::CorruptCheckpoint { .. }), "{what} at {at}: {err:?}");
    }
}

#[test]
fn a_flipped_byte_in_a_checkpoint_data_file_fails_open() {
    checkpoint_damage("data-0000000001.ckpt", flip, "flipped byte");
    checkpoint_damage("data-0000000002.ckpt", flip, "flipped byte");
}

#[test]
fn a_flipped_byte_in_a_checkpoint_delta_file_fails_open() {
    checkpoint_damage("delta-0000000002.ckpt", flip, "flipped byte");
}

#[test]
fn a_flipped_byte_in_the_manifest_fails_open() {
    checkpoint_damage("MANIFEST-0000000002", flip, "flipped byte");
}

#[test]
fn truncated_or_extended_checkpoint_files_fail_open() {
    for file in ["data-0000000001.ckpt", "delta-0000000002.ckpt", "MANIFEST-0000000002"] {
        checkpoint_damage(file, truncate, "truncated");
    }
    let (fixture, _) = checkpoint_fixture();
    for file in ["data-0000000002.ckpt", "delta-0000000002.ckpt", "MANIFEST-0000000002"] {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(fixture.path(), copy.path());
        let path = copy.path().join("checkpoint").join(file);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"junk");
        fs::write(&path, bytes).unwrap();
        assert_corruption_naming(&open_err(copy.path()), &path);
    }
}

/// A checkpoint taken at the end of the log covers every record, so its
/// `replay_from` is the log's end. If the last record is then damaged (a bit
/// flip, not a torn write: it was fsynced long ago), `Log::open` takes it for
/// a torn tail and cuts it, leaving the log ending before `replay_from`.
/// The engine must not then fail with an unclassified "LSN outside the log's
/// range" error: either it opens with the checkpointed rows (and keeps
/// working across restarts), or it reports corruption naming the file.
#[test]
fn damage_to_the_last_record_behind_a_checkpoint() {
    let fixture = log_fixture(64 << 20);
    {
        let e = Engine::open(config(fixture.path())).unwrap();
        let stats = e.checkpoint().unwrap().unwrap();
        assert_eq!(stats.replay_from, e.log().unwrap().end_lsn(), "the checkpoint covers the whole log");
    }
    let seg = segments(fixture.path()).pop().unwrap();
    let (offset, len) = *frames(&seg).last().unwrap();
    flip(&seg, offset + len - 1);
    match Engine::open(config(fixture.path())) {
        Ok(e) => {
            assert_eq!(contents(&e), expect_rows(0..LOG_ROWS), "the checkpoint holds every row");
            let t = e.table("t").unwrap();
            insert(&e, &t, 1000, "v1000");
            e.checkpoint().unwrap();
            insert(&e, &t, 1001, "v1001");
            drop(e);
            let e = Engine::open(config(fixture.path())).unwrap();
            let mut expected = expect_rows(0..LOG_ROWS);
            expected.extend([(1000, "v1000".to_string()), (1001, "v1001".to_string())]);
            assert_eq!(contents(&e), expected);
        }
        Err(err) => assert_corruption_naming(&err, &seg),
    }
}
