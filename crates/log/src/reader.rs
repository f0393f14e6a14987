//! Sequential, verifying reads of the log for recovery and the checkpointer.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};

use crate::Lsn;
use crate::error::LogError;
use crate::frame::{FRAME_HEADER_LEN, FrameHeader, frame_len};
use crate::log::LogRecord;
use crate::segment::{SEGMENT_HEADER_LEN, SegmentMeta, check_segment_header_of};

const READ_BUFFER_BYTES: usize = 256 << 10;

/// Iterator over records from a start LSN up to a fixed end (the durable LSN
/// when [`Log::read_from`](crate::Log::read_from) was called). Each item is
/// checked (checksum, LSN, segment header); after the first error the
/// iterator ends.
pub struct LogReader {
    /// Snapshot of the segment list, oldest first.
    segments: Vec<SegmentMeta>,
    /// Index into `segments` of the segment holding `position`.
    segment_index: usize,
    /// Open reader on `segments[segment_index]`, positioned at `position`.
    current: Option<BufReader<File>>,
    position: Lsn,
    end: Lsn,
    failed: bool,
}

impl LogReader {
    pub(crate) fn new(segments: Vec<SegmentMeta>, from: Lsn, end: Lsn) -> LogReader {
        let segment_index = segments.partition_point(|segment| segment.start <= from).saturating_sub(1);
        LogReader { segments, segment_index, current: None, position: from, end, failed: false }
    }

    /// LSN of the next record to be returned.
    pub fn position(&self) -> Lsn {
        self.position
    }

    /// The reader stops here: the durable end when it was created.
    pub fn end_lsn(&self) -> Lsn {
        self.end
    }

    fn read_next(&mut self) -> Result<LogRecord, LogError> {
        // Records never span segments, so reaching the next segment's start
        // LSN means continuing at the top of that file.
        while self.segment_index + 1 < self.segments.len()
            && self.segments[self.segment_index + 1].start <= self.position
        {
            self.segment_index += 1;
            self.current = None;
        }
        let segment = &self.segments[self.segment_index];
        let segment_limit = self.segments.get(self.segment_index + 1).map_or(self.end, |next| next.start.min(self.end));
        let file_offset = SEGMENT_HEADER_LEN + (self.position - segment.start);
        let path = segment.path.clone();
        let corrupt = |offset: u64, reason: String| LogError::corrupt(&path, offset, reason);

        let reader = match &mut self.current {
            Some(reader) => reader,
            None => {
                let mut file = File::open(&path)
                    .map_err(|e| LogError::io(format!("opening log segment {}", path.display()), e))?;
                check_segment_header_of(&mut file, &path, segment.start)?;
                file.seek(SeekFrom::Start(file_offset))
                    .map_err(|e| LogError::io(format!("seeking in log segment {}", path.display()), e))?;
                self.current.insert(BufReader::with_capacity(READ_BUFFER_BYTES, file))
            }
        };

        let mut header_bytes = [0u8; FRAME_HEADER_LEN];
        read_exact_or_corrupt(reader, &mut header_bytes, &path, file_offset)?;
        let header = FrameHeader::parse(&header_bytes);
        header.check_shape(self.position).map_err(|reason| corrupt(file_offset, reason))?;
        let record_end = self.position + frame_len(header.payload_len as usize);
        if record_end > segment_limit {
            return Err(corrupt(
                file_offset,
                format!(
                    "record ends at LSN {record_end}, past the end of the readable log \
                     or segment (LSN {segment_limit}); the read did not start at a record boundary"
                ),
            ));
        }
        let mut payload = vec![0u8; header.payload_len as usize];
        read_exact_or_corrupt(reader, &mut payload, &path, file_offset)?;
        header.check_payload(&payload).map_err(|reason| corrupt(file_offset, reason))?;
        let record = LogRecord { lsn: self.position, end: record_end, stream: header.stream, payload };
        self.position = record_end;
        Ok(record)
    }
}

/// `read_exact`, except that running out of file is corruption: the bytes
/// being read are below the durable LSN and must exist.
fn read_exact_or_corrupt(
    reader: &mut impl Read,
    buf: &mut [u8],
    path: &std::path::Path,
    frame_offset: u64,
) -> Result<(), LogError> {
    reader.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            LogError::corrupt(path, frame_offset, "segment ends in the middle of a durable record")
        } else {
            LogError::io(format!("reading log segment {}", path.display()), e)
        }
    })
}

impl Iterator for LogReader {
    type Item = Result<LogRecord, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.end {
            return None;
        }
        let result = self.read_next();
        if result.is_err() {
            self.failed = true;
        }
        Some(result)
    }
}

impl std::fmt::Debug for LogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader").field("position", &self.position).field("end", &self.end).finish_non_exhaustive()
    }
}
