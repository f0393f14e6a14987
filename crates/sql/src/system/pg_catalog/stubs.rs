//! The catalogs of what Tessera does not have (comments, functions,
//! inheritance, role membership, row security policies, triggers, rules,
//! extended statistics, publications, foreign and partitioned tables,
//! collations): empty, with the columns clients' queries of them read,
//! so that those queries plan and find nothing.

use crate::system::view::ColumnType::{Bool, Int4, Int8, Text};
use crate::system::view::EmptyView;

pub static PG_DESCRIPTION: EmptyView = EmptyView {
    name: "pg_description",
    columns: &[("objoid", Int8), ("classoid", Int8), ("objsubid", Int4), ("description", Text)],
};

pub static PG_PROC: EmptyView = EmptyView {
    name: "pg_proc",
    columns: &[("oid", Int8), ("proname", Text), ("pronamespace", Int8), ("prorettype", Int8)],
};

pub static PG_INHERITS: EmptyView = EmptyView {
    name: "pg_inherits",
    columns: &[("inhrelid", Int8), ("inhparent", Int8), ("inhseqno", Int4), ("inhdetachpending", Bool)],
};

pub static PG_AUTH_MEMBERS: EmptyView = EmptyView {
    name: "pg_auth_members",
    columns: &[
        ("roleid", Int8),
        ("member", Int8),
        ("grantor", Int8),
        ("admin_option", Bool),
        ("inherit_option", Bool),
        ("set_option", Bool),
    ],
};

pub static PG_POLICY: EmptyView = EmptyView {
    name: "pg_policy",
    columns: &[
        ("oid", Int8),
        ("polname", Text),
        ("polrelid", Int8),
        ("polcmd", Text),
        ("polpermissive", Bool),
        ("polroles", Text),
        ("polqual", Text),
        ("polwithcheck", Text),
    ],
};

pub static PG_TRIGGER: EmptyView = EmptyView {
    name: "pg_trigger",
    columns: &[
        ("oid", Int8),
        ("tgrelid", Int8),
        ("tgname", Text),
        ("tgisinternal", Bool),
        ("tgenabled", Text),
        ("tgparentid", Int8),
    ],
};

pub static PG_REWRITE: EmptyView =
    EmptyView { name: "pg_rewrite", columns: &[("oid", Int8), ("rulename", Text), ("ev_class", Int8)] };

pub static PG_STATISTIC_EXT: EmptyView = EmptyView {
    name: "pg_statistic_ext",
    columns: &[
        ("oid", Int8),
        ("stxrelid", Int8),
        ("stxname", Text),
        ("stxnamespace", Int8),
        ("stxkind", Text),
        ("stxstattarget", Int4),
    ],
};

pub static PG_PUBLICATION: EmptyView =
    EmptyView { name: "pg_publication", columns: &[("oid", Int8), ("pubname", Text), ("puballtables", Bool)] };

pub static PG_PUBLICATION_REL: EmptyView =
    EmptyView { name: "pg_publication_rel", columns: &[("oid", Int8), ("prpubid", Int8), ("prrelid", Int8)] };

pub static PG_PUBLICATION_NAMESPACE: EmptyView =
    EmptyView { name: "pg_publication_namespace", columns: &[("oid", Int8), ("pnpubid", Int8), ("pnnspid", Int8)] };

pub static PG_FOREIGN_TABLE: EmptyView =
    EmptyView { name: "pg_foreign_table", columns: &[("ftrelid", Int8), ("ftserver", Int8)] };

pub static PG_PARTITIONED_TABLE: EmptyView =
    EmptyView { name: "pg_partitioned_table", columns: &[("partrelid", Int8), ("partstrat", Text)] };

pub static PG_COLLATION: EmptyView =
    EmptyView { name: "pg_collation", columns: &[("oid", Int8), ("collname", Text), ("collnamespace", Int8)] };
