//! TPC-H's queries on a small generated data set, each returning exactly PostgreSQL 15's rows.
