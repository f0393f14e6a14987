//! Session settings (GUCs): the known settings, their defaults, and a
//! session's values (SET, SHOW and RESET are `session::settings`).
//!
//! Only settings Tessera knows are accepted; a few accept only the values
//! Tessera implements (DateStyle ISO, UTC-based time zones) and say so.

use std::collections::BTreeMap;

use tessera_engine::Isolation;

use crate::error::{Result, SqlError, code};

pub const SERVER_VERSION: &str = "16.6 (Tessera 0.1)";
pub const SERVER_VERSION_NUM: &str = "160006";

/// (name, default, description). Names are matched case-insensitively.
const KNOWN: &[(&str, &str, &str)] = &[
    ("application_name", "", "Sets the application name reported in statistics and logs."),
    ("client_encoding", "UTF8", "Sets the client's character set encoding."),
    ("client_min_messages", "notice", "Sets the message levels that are sent to the client."),
    ("DateStyle", "ISO, MDY", "Sets the display format for date and time values."),
    ("default_transaction_isolation", "read committed", "Sets the isolation level of each new transaction."),
    ("default_transaction_read_only", "off", "Sets the default read-only status of new transactions."),
    ("default_transaction_deferrable", "off", "Sets the default deferrable status of new transactions."),
    ("extra_float_digits", "1", "Sets the number of digits displayed for floating-point values."),
    ("idle_in_transaction_session_timeout", "0", "Terminates a session idle in a transaction for longer (ms)."),
    ("in_hot_standby", "off", "Shows whether the session reads on a secondary (a hot standby)."),
    ("integer_datetimes", "on", "Shows whether datetimes are integer based."),
    ("IntervalStyle", "postgres", "Sets the display format for interval values."),
    ("is_superuser", "on", "Shows whether the current user is a superuser."),
    ("lc_collate", "C", "Shows the collation order locale."),
    ("lc_ctype", "C", "Shows the character classification locale."),
    ("lc_messages", "C", "Sets the language in which messages are displayed."),
    ("lc_monetary", "C", "Sets the locale for formatting monetary amounts."),
    ("lc_numeric", "C", "Sets the locale for formatting numbers."),
    ("lock_timeout", "0", "Sets the maximum allowed duration of any wait for a lock (ms)."),
    ("max_connections", "100", "Sets the maximum number of concurrent connections."),
    ("max_identifier_length", "63", "Shows the maximum identifier length."),
    ("search_path", "\"$user\", public", "Sets the schema search order for names that are not schema-qualified."),
    ("server_encoding", "UTF8", "Shows the server (database) character set encoding."),
    ("server_version", SERVER_VERSION, "Shows the server version."),
    ("server_version_num", SERVER_VERSION_NUM, "Shows the server version as an integer."),
    ("standard_conforming_strings", "on", "Causes '...' strings to treat backslashes literally."),
    ("statement_timeout", "0", "Sets the maximum allowed duration of any statement (ms)."),
    ("synchronous_commit", "on", "Sets whether a commit waits for its log record to reach the disk."),
    ("TimeZone", "UTC", "Sets the time zone for displaying and interpreting time stamps."),
    ("transaction_isolation", "read committed", "Sets the current transaction's isolation level."),
    ("transaction_read_only", "off", "Sets the current transaction's read-only status."),
    (
        "transaction_deferrable",
        "off",
        "Whether to defer a read-only serializable transaction until it can run without failing.",
    ),
    ("row_security", "on", "Enables row security."),
    ("bytea_output", "hex", "Sets the output format for bytea."),
    ("jit", "off", "Allow JIT compilation."),
    ("work_mem", "4MB", "Sets the maximum memory to be used for query workspaces."),
    ("maintenance_work_mem", "64MB", "Sets the maximum memory to be used for maintenance operations."),
    ("enable_seqscan", "on", "Enables the planner's use of sequential-scan plans."),
    // PostgreSQL's planner method and cost settings: they choose among
    // plans of the same answer, so Tessera keeps them (SET, SHOW, RESET)
    // and its plans do not change.
    ("enable_async_append", "on", "Enables the planner's use of async append plans."),
    ("enable_bitmapscan", "on", "Enables the planner's use of bitmap-scan plans."),
    ("enable_gathermerge", "on", "Enables the planner's use of gather merge plans."),
    ("enable_hashagg", "on", "Enables the planner's use of hashed aggregation plans."),
    ("enable_hashjoin", "on", "Enables the planner's use of hash join plans."),
    ("enable_incremental_sort", "on", "Enables the planner's use of incremental sort steps."),
    ("enable_indexonlyscan", "on", "Enables the planner's use of index-only-scan plans."),
    ("enable_indexscan", "on", "Enables the planner's use of index-scan plans."),
    ("enable_material", "on", "Enables the planner's use of materialization."),
    ("enable_memoize", "on", "Enables the planner's use of memoization."),
    ("enable_mergejoin", "on", "Enables the planner's use of merge join plans."),
    ("enable_nestloop", "on", "Enables the planner's use of nested-loop join plans."),
    ("enable_parallel_append", "on", "Enables the planner's use of parallel append plans."),
    ("enable_parallel_hash", "on", "Enables the planner's use of parallel hash plans."),
    ("enable_partition_pruning", "on", "Enables plan-time and execution-time partition pruning."),
    ("enable_partitionwise_aggregate", "off", "Enables partitionwise aggregation and grouping."),
    ("enable_partitionwise_join", "off", "Enables partitionwise join."),
    (
        "enable_presorted_aggregate",
        "on",
        "Enables the planner's ability to produce plans that provide presorted input for ORDER BY / DISTINCT aggregate functions.",
    ),
    ("enable_sort", "on", "Enables the planner's use of explicit sort steps."),
    ("enable_tidscan", "on", "Enables the planner's use of TID scan plans."),
    ("seq_page_cost", "1", "Sets the planner's estimate of the cost of a sequentially fetched disk page."),
    ("random_page_cost", "4", "Sets the planner's estimate of the cost of a nonsequentially fetched disk page."),
    ("cpu_tuple_cost", "0.01", "Sets the planner's estimate of the cost of processing each tuple (row)."),
    (
        "cpu_index_tuple_cost",
        "0.005",
        "Sets the planner's estimate of the cost of processing each index entry during an index scan.",
    ),
    (
        "cpu_operator_cost",
        "0.0025",
        "Sets the planner's estimate of the cost of processing each operator or function call.",
    ),
    (
        "parallel_setup_cost",
        "1000",
        "Sets the planner's estimate of the cost of starting up worker processes for parallel query.",
    ),
    (
        "parallel_tuple_cost",
        "0.1",
        "Sets the planner's estimate of the cost of passing each tuple (row) from worker to leader backend.",
    ),
    ("min_parallel_table_scan_size", "8MB", "Sets the minimum amount of table data for a parallel scan."),
    ("min_parallel_index_scan_size", "512kB", "Sets the minimum amount of index data for a parallel scan."),
    ("max_parallel_workers_per_gather", "2", "Sets the maximum number of parallel processes per executor node."),
    ("effective_cache_size", "4GB", "Sets the planner's assumption about the total size of the data caches."),
    ("from_collapse_limit", "8", "Sets the FROM-list size beyond which subqueries are not collapsed."),
    ("join_collapse_limit", "8", "Sets the FROM-list size beyond which JOIN constructs are not flattened."),
    ("geqo", "on", "Enables genetic query optimization."),
    ("plan_cache_mode", "auto", "Controls the planner's selection of custom or generic plan."),
    ("jit_above_cost", "100000", "Perform JIT compilation if query is more expensive."),
    ("escape_string_warning", "on", "Warn about backslash escapes in ordinary string literals."),
    ("max_stack_depth", "2MB", "Sets the maximum stack depth, in kilobytes."),
    ("tessera.fast_path", "on", "Runs short primary-key statements on Tessera's fast path."),
    (
        "tessera.read_from",
        "primary",
        "Where a cluster session runs: primary, or secondary (read-only, bounded staleness); chosen when connecting.",
    ),
    (
        "tessera.max_staleness",
        "10s",
        "How far behind the primary a secondary may be for a read there (ms, or with a unit).",
    ),
    (
        "tessera.copy_commit_rows",
        "0",
        "COPY FROM outside a transaction block commits after every this many rows (0: all in one transaction).",
    ),
];

pub(crate) fn canonical(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    let lower = if lower == "time zone" || lower == "timezone" { "timezone".to_string() } else { lower };
    KNOWN.iter().find(|(n, _, _)| n.to_lowercase() == lower).map(|(n, _, _)| *n)
}

#[derive(Debug, Clone)]
pub struct Settings {
    values: BTreeMap<&'static str, String>,
    hot: Hot,
}

/// The settings read on every statement, kept decoded so that reading them
/// costs no lookup.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hot {
    pub fast_path: bool,
    pub lazy_commit: bool,
    pub statement_timeout_ms: u64,
    pub default_isolation: Option<tessera_engine::Isolation>,
    pub default_read_only: bool,
    /// `tessera.copy_commit_rows` (0: off).
    pub copy_commit_rows: u64,
    /// `TimeZone`.
    pub zone: crate::values::tz::Zone,
    /// `IntervalStyle`.
    pub interval_style: crate::values::interval_out::IntervalStyle,
    /// `extra_float_digits` (-15 … 3).
    pub extra_float_digits: i8,
    /// `bytea_output` is `escape` (not `hex`).
    pub bytea_escape: bool,
}

impl Default for Settings {
    fn default() -> Self {
        let mut s =
            Settings { values: KNOWN.iter().map(|(n, d, _)| (*n, d.to_string())).collect(), hot: Hot::default() };
        s.refresh_hot();
        s
    }
}

impl Settings {
    pub fn get(&self, name: &str) -> String {
        canonical(name).and_then(|n| self.values.get(n).cloned()).unwrap_or_default()
    }

    /// Sets a value, validating the ones Tessera interprets.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let Some(key) = canonical(name) else {
            return Err(SqlError::new(
                code::UNDEFINED_OBJECT,
                format!("unrecognized configuration parameter \"{name}\""),
            ));
        };
        let value = validate(key, value)?;
        self.values.insert(key, value);
        self.refresh_hot();
        Ok(())
    }

    /// A session's defaults: on a secondary, what a PostgreSQL hot standby
    /// reports, by which drivers that look for a standby or a read-only
    /// server (libpq's `target_session_attrs`) recognise a reading session.
    pub(crate) fn defaults(standby: bool) -> Settings {
        let mut s = Settings::default();
        if standby {
            for name in ["in_hot_standby", "default_transaction_read_only", "transaction_read_only"] {
                s.values.insert(canonical(name).expect("a known setting"), "on".into());
            }
            s.refresh_hot();
        }
        s
    }

    pub fn hot(&self) -> Hot {
        self.hot
    }

    fn refresh_hot(&mut self) {
        let value = |n: &str| self.values.get(n).map(|v| v.as_str()).unwrap_or("");
        self.hot = Hot {
            fast_path: value("tessera.fast_path") == "on",
            lazy_commit: value("synchronous_commit") == "off",
            statement_timeout_ms: parse_millis(value("statement_timeout")).unwrap_or(0),
            default_isolation: isolation_from_name(value("default_transaction_isolation")),
            default_read_only: value("default_transaction_read_only") == "on",
            copy_commit_rows: value("tessera.copy_commit_rows").parse().unwrap_or(0),
            zone: crate::values::tz::Zone::of_setting(value("TimeZone")),
            interval_style: crate::values::interval_out::IntervalStyle::of_setting(value("IntervalStyle"))
                .unwrap_or_default(),
            extra_float_digits: value("extra_float_digits").parse().unwrap_or(1),
            bytea_escape: value("bytea_output") == "escape",
        };
    }

    /// Applies a startup parameter, ignoring values Tessera cannot honour
    /// rather than refusing the connection.
    pub fn set_startup(&mut self, name: &str, value: &str) {
        if let Err(e) = self.set(name, value) {
            tracing::debug!(name, value, "startup parameter ignored: {e}");
        }
    }

    /// The settings a session changed from their defaults (at startup or
    /// with SET), that a session opened elsewhere for it must be given:
    /// neither the current transaction's own nor the ones that only report.
    pub fn changed(&self) -> Vec<(&'static str, String)> {
        const NOT_CARRIED: &[&str] = &[
            "transaction_isolation",
            "transaction_read_only",
            "in_hot_standby",
            "is_superuser",
            "server_version",
            "server_version_num",
            "server_encoding",
            "integer_datetimes",
            "max_identifier_length",
            "lc_collate",
            "lc_ctype",
            "max_connections",
            "tessera.read_from",
        ];
        KNOWN
            .iter()
            .filter(|(n, _, _)| !NOT_CARRIED.contains(n))
            .filter_map(|(n, d, _)| self.values.get(n).filter(|v| v != d).map(|v| (*n, v.clone())))
            .collect()
    }

    pub fn all(&self) -> Vec<(&'static str, String, &'static str)> {
        KNOWN.iter().map(|(n, _, d)| (*n, self.values.get(n).cloned().unwrap_or_default(), *d)).collect()
    }

    /// `statement_timeout` in milliseconds (0 = none).
    pub fn millis(&self, name: &str) -> u64 {
        parse_millis(&self.get(name)).unwrap_or(0)
    }
}

fn parse_millis(v: &str) -> Option<u64> {
    let v = v.trim().to_lowercase();
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(v.len()));
    let n: f64 = num.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" => 1.0,
        "s" => 1000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "us" => 0.001,
        _ => return None,
    };
    Some((n * factor) as u64)
}

pub(crate) fn validate(key: &str, value: &str) -> Result<String> {
    let bad = |hint: &str| {
        SqlError::new(code::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{key}\": \"{value}\""))
            .with_hint(hint.to_string())
    };
    match key {
        "server_version"
        | "server_version_num"
        | "server_encoding"
        | "integer_datetimes"
        | "in_hot_standby"
        | "lc_collate"
        | "lc_ctype"
        | "max_identifier_length"
        | "max_connections"
        | "is_superuser" => {
            Err(SqlError::new(code::CANT_CHANGE_RUNTIME_PARAM, format!("parameter \"{key}\" cannot be changed")))
        }
        "tessera.read_from" => match value.to_lowercase().as_str() {
            v @ ("primary" | "secondary") => Ok(v.to_string()),
            _ => Err(bad("Use primary or secondary.")),
        },
        "tessera.copy_commit_rows" => match value.trim().parse::<u64>() {
            Ok(n) => Ok(n.to_string()),
            Err(_) => Err(bad("Use a number of rows (0: a COPY is one transaction).")),
        },
        "statement_timeout" | "idle_in_transaction_session_timeout" | "lock_timeout" | "tessera.max_staleness" => {
            let ms = parse_millis(value)
                .ok_or_else(|| bad("Use a number of milliseconds, optionally with a unit (s, min)."))?;
            // Shown as PostgreSQL shows it: in the largest unit that divides it.
            Ok(match ms {
                0 => "0".to_string(),
                m if m % 3_600_000 == 0 => format!("{}h", m / 3_600_000),
                m if m % 60_000 == 0 => format!("{}min", m / 60_000),
                m if m % 1000 == 0 => format!("{}s", m / 1000),
                m => format!("{m}ms"),
            })
        }
        "default_transaction_isolation" | "transaction_isolation" => {
            isolation_from_name(value).ok_or_else(|| {
                bad("Available values: serializable, repeatable read, read committed, read uncommitted.")
            })?;
            Ok(value.to_lowercase())
        }
        "client_encoding" => match value.to_uppercase().replace(['-', '_'], "").as_str() {
            "UTF8" | "UNICODE" => Ok("UTF8".into()),
            _ => Err(SqlError::unsupported(format!("client encoding \"{value}\" (Tessera speaks UTF8)"))),
        },
        // The output style and the order of day, month and year in date
        // input: Tessera prints ISO and reads month-day-year. Anything else
        // is refused, not taken as ISO, MDY: a date read in another order
        // would be a silent wrong answer.
        "DateStyle" => {
            for token in value.split([',', ' ']).map(str::trim).filter(|t| !t.is_empty()) {
                match token.to_uppercase().as_str() {
                    "ISO" | "MDY" | "US" | "NONEURO" | "NONEUROPEAN" | "DEFAULT" => {}
                    "DMY" | "YMD" | "EURO" | "EUROPEAN" => {
                        return Err(SqlError::unsupported(format!(
                            "DateStyle \"{value}\" (Tessera reads dates month-day-year only)"
                        )));
                    }
                    "SQL" | "POSTGRES" | "GERMAN" => {
                        return Err(SqlError::unsupported(format!("DateStyle \"{value}\" (Tessera prints ISO only)")));
                    }
                    _ => return Err(bad("Unrecognized key word.")),
                }
            }
            Ok("ISO, MDY".into())
        }
        "bytea_output" => match value.trim().to_lowercase().as_str() {
            v @ ("hex" | "escape") => Ok(v.to_string()),
            _ => Err(bad("Available values: escape, hex.")),
        },
        "extra_float_digits" => match value.trim().parse::<i8>() {
            Ok(n) if (-15..=3).contains(&n) => Ok(n.to_string()),
            _ => Err(SqlError::new(
                code::INVALID_PARAMETER_VALUE,
                format!("{value} is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)"),
            )),
        },
        "IntervalStyle" => match crate::values::interval_out::IntervalStyle::of_setting(value) {
            Some(_) => Ok(value.trim().to_ascii_lowercase()),
            None => Err(bad("Available values: postgres, postgres_verbose, sql_standard, iso_8601.")),
        },
        "TimeZone" => match value.trim().to_uppercase().as_str() {
            // The server's own zone.
            "LOCAL" | "DEFAULT" => Ok("UTC".into()),
            _ => crate::values::tz::Zone::parse(value).map(|(_, name)| name),
        },
        "synchronous_commit" => match value.to_lowercase().as_str() {
            "on" | "true" | "local" | "remote_write" | "remote_apply" | "1" => Ok("on".into()),
            "off" | "false" | "0" => Ok("off".into()),
            _ => Err(bad("Use on or off.")),
        },
        "default_transaction_read_only"
        | "default_transaction_deferrable"
        | "transaction_deferrable"
        | "transaction_read_only"
        | "tessera.fast_path"
        | "jit"
        | "geqo"
        | "escape_string_warning"
        | "row_security"
        | "standard_conforming_strings" => match value.to_lowercase().as_str() {
            "on" | "true" | "1" | "yes" => Ok("on".into()),
            "off" | "false" | "0" | "no" if key != "standard_conforming_strings" => Ok("off".into()),
            _ => Err(bad("Use on or off.")),
        },
        k if k.starts_with("enable_") => match value.to_lowercase().as_str() {
            "on" | "true" | "1" | "yes" => Ok("on".into()),
            "off" | "false" | "0" | "no" => Ok("off".into()),
            _ => Err(bad("Use on or off.")),
        },
        _ => Ok(value.to_string()),
    }
}

/// Maps PostgreSQL's level names onto the engine.
pub fn isolation_from_name(name: &str) -> Option<Isolation> {
    match name.trim().to_lowercase().replace('_', " ").as_str() {
        "read committed" | "read uncommitted" => Some(Isolation::ReadCommitted),
        "repeatable read" => Some(Isolation::Snapshot),
        "serializable" => Some(Isolation::Serializable),
        _ => None,
    }
}

pub fn isolation_name(i: Isolation) -> &'static str {
    match i {
        Isolation::ReadCommitted => "read committed",
        Isolation::Snapshot | Isolation::RepeatableRead => "repeatable read",
        Isolation::Serializable => "serializable",
    }
}
