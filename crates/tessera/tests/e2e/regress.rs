//! PostgreSQL 15's own regression files, statement by statement, against PostgreSQL's answers.
