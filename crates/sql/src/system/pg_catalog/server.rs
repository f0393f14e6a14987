//! What `pg_catalog` shows beside a database's relations: the server's
//! databases (`pg_database`), roles (`pg_roles`, `pg_user`), settings
//! (`pg_settings`), the querying session (`pg_stat_activity`), and the
//! fixed rows of `pg_am` and `pg_tablespace`.

use crate::scope::Resolver;
use crate::system::view::{View, view_row};

view_row! {
    /// A row of `pg_database`: a database, in the UTF8 encoding (6) and
    /// the C locale.
    pub struct PgDatabase {
        oid: i64,
        datname: String,
        datdba: i64,
        encoding: i32,
        datcollate: &'static str,
        datctype: &'static str,
        datistemplate: bool,
        datallowconn: bool,
        datconnlimit: i32,
        datacl: Option<Vec<Option<String>>>,
        daticulocale: Option<String>,
        datlocprovider: &'static str,
        dattablespace: i64,
        datcollversion: Option<String>,
        daticurules: Option<String>,
    }
}

pub static PG_DATABASE: View<PgDatabase> = View { name: "pg_database", rows: pg_database };

fn pg_database(r: &Resolver) -> Vec<PgDatabase> {
    r.catalog
        .databases()
        .iter()
        .map(|d| PgDatabase {
            oid: d.oid as i64,
            datname: d.name.clone(),
            datdba: 10,
            encoding: 6,
            datcollate: "C",
            datctype: "C",
            datistemplate: false,
            datallowconn: true,
            datconnlimit: -1,
            datacl: None,
            daticulocale: None,
            datlocprovider: "c",
            dattablespace: 1663,
            datcollversion: None,
            daticurules: None,
        })
        .collect()
}

view_row! {
    /// A row of `pg_roles` and `pg_user` (one view here, with the columns
    /// of both): a role. Passwords never show.
    pub struct PgRoles {
        oid: i64,
        rolname: String,
        rolsuper: bool,
        rolinherit: bool,
        rolcreaterole: bool,
        rolcreatedb: bool,
        rolcanlogin: bool,
        rolreplication: bool,
        rolconnlimit: i32,
        rolpassword: &'static str,
        rolvaliduntil: Option<String>,
        rolbypassrls: bool,
        usesysid: i64,
        usesuper: bool,
        usecreatedb: bool,
    }
}

pub static PG_ROLES: View<PgRoles> = View { name: "pg_roles", rows: pg_roles };
pub static PG_USER: View<PgRoles> = View { name: "pg_user", rows: pg_roles };

/// The roles; a superuser may also create roles.
fn pg_roles(r: &Resolver) -> Vec<PgRoles> {
    r.catalog
        .roles()
        .iter()
        .map(|ro| PgRoles {
            oid: ro.oid as i64,
            rolname: ro.name.clone(),
            rolsuper: ro.superuser,
            rolinherit: true,
            rolcreaterole: ro.superuser,
            rolcreatedb: ro.create_db,
            rolcanlogin: ro.login,
            rolreplication: false,
            rolconnlimit: -1,
            rolpassword: "********",
            rolvaliduntil: None,
            rolbypassrls: false,
            usesysid: ro.oid as i64,
            usesuper: ro.superuser,
            usecreatedb: ro.create_db,
        })
        .collect()
}

view_row! {
    /// A row of `pg_settings`: a setting and its value in this session.
    pub struct PgSettings {
        name: &'static str,
        setting: String,
        short_desc: &'static str,
        context: &'static str,
        vartype: &'static str,
        source: &'static str,
    }
}

pub static PG_SETTINGS: View<PgSettings> = View { name: "pg_settings", rows: pg_settings };

fn pg_settings(r: &Resolver) -> Vec<PgSettings> {
    let all = r.info.settings.lock().all();
    all.into_iter()
        .map(|(name, setting, short_desc)| PgSettings {
            name,
            setting,
            short_desc,
            context: "user",
            vartype: "string",
            source: "default",
        })
        .collect()
}

view_row! {
    /// A row of `pg_stat_activity`: a session (only the querying one
    /// shows).
    pub struct PgStatActivity {
        datname: String,
        pid: i32,
        usename: String,
        application_name: String,
        state: &'static str,
        query: Option<String>,
    }
}

pub static PG_STAT_ACTIVITY: View<PgStatActivity> = View { name: "pg_stat_activity", rows: pg_stat_activity };

fn pg_stat_activity(r: &Resolver) -> Vec<PgStatActivity> {
    vec![PgStatActivity {
        datname: r.db.clone(),
        pid: r.info.pid,
        usename: r.info.user.clone(),
        application_name: r.info.settings.lock().get("application_name"),
        state: "active",
        query: None,
    }]
}

view_row! {
    /// A row of `pg_am`: an access method.
    pub struct PgAm {
        oid: i64,
        amname: &'static str,
        amtype: &'static str,
    }
}

pub static PG_AM: View<PgAm> = View { name: "pg_am", rows: pg_am };

/// The table access method (`heap`) and the two index methods Tessera
/// has, with PostgreSQL's OIDs.
fn pg_am(_: &Resolver) -> Vec<PgAm> {
    let method = |oid, amname, amtype| PgAm { oid, amname, amtype };
    vec![method(2, "heap", "t"), method(403, "btree", "i"), method(405, "hash", "i")]
}

view_row! {
    /// A row of `pg_tablespace`: a tablespace.
    pub struct PgTablespace {
        oid: i64,
        spcname: &'static str,
    }
}

pub static PG_TABLESPACE: View<PgTablespace> = View { name: "pg_tablespace", rows: pg_tablespace };

/// PostgreSQL's default tablespace, the only one.
fn pg_tablespace(_: &Resolver) -> Vec<PgTablespace> {
    vec![PgTablespace { oid: 1663, spcname: "pg_default" }]
}
