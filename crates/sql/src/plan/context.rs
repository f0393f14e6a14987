//! The DataFusion side of a session: a catalog provider per session that
//! resolves names against the Tessera catalog and reads through the
//! session's transaction, and the session context configured for
//! PostgreSQL's dialect.
//!
//! Schemas: `public` (user tables; unqualified names also find the system
//! tables, as PostgreSQL's implicit `pg_catalog` search path does),
//! `pg_catalog`, `information_schema`, `tessera` (Tessera's own system
//! views, such as `tessera.databases`), and `__dml`, which exposes keyless
//! tables' hidden row id to the statements UPDATE and DELETE run.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider};
use datafusion::common::config::Dialect;
use datafusion::datasource::TableProvider;
use datafusion::error::Result as DfResult;
use datafusion::execution::context::{SessionConfig, SessionContext};

use crate::scope::Resolver;
use crate::system::information_schema::INFORMATION_SCHEMA;
use crate::system::pg_catalog::PG_CATALOG;
use crate::system::tessera_views::TESSERA;

pub const DML_SCHEMA: &str = "__dml";

#[derive(Debug)]
struct TesseraCatalog(Resolver);

impl CatalogProvider for TesseraCatalog {
    fn schema_names(&self) -> Vec<String> {
        vec!["public".into(), "pg_catalog".into(), "information_schema".into(), "tessera".into()]
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let kind = match name {
            "public" => SchemaKind::Public,
            "pg_catalog" => SchemaKind::PgCatalog,
            "information_schema" => SchemaKind::InformationSchema,
            "tessera" => SchemaKind::Tessera,
            DML_SCHEMA => SchemaKind::Dml,
            "__scratch" => SchemaKind::Scratch,
            _ => return None,
        };
        Some(Arc::new(TesseraSchema { r: self.0.clone(), kind }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SchemaKind {
    Public,
    PgCatalog,
    InformationSchema,
    Tessera,
    Dml,
    Scratch,
}

#[derive(Debug)]
struct TesseraSchema {
    r: Resolver,
    kind: SchemaKind,
}

#[async_trait]
impl SchemaProvider for TesseraSchema {
    fn table_names(&self) -> Vec<String> {
        match self.kind {
            SchemaKind::Public | SchemaKind::Dml => {
                self.r.catalog.tables(&self.r.db).iter().map(|t| t.name.clone()).collect()
            }
            SchemaKind::PgCatalog => PG_CATALOG.names().map(String::from).collect(),
            SchemaKind::InformationSchema => INFORMATION_SCHEMA.names().map(String::from).collect(),
            SchemaKind::Tessera => TESSERA.names().map(String::from).collect(),
            SchemaKind::Scratch => self.r.scratch.lock().keys().cloned().collect(),
        }
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(match self.kind {
            SchemaKind::Public => match self.r.user_table(name, false) {
                Some(t) => Some(t),
                None => PG_CATALOG.table(&self.r, name)?,
            },
            SchemaKind::Dml => self.r.user_table(name, true),
            SchemaKind::PgCatalog => PG_CATALOG.table(&self.r, name)?,
            SchemaKind::InformationSchema => INFORMATION_SCHEMA.table(&self.r, name)?,
            SchemaKind::Tessera => TESSERA.table(&self.r, name)?,
            SchemaKind::Scratch => match self.r.scratch.lock().get(name) {
                Some(b) => {
                    Some(Arc::new(datafusion::datasource::MemTable::try_new(b.schema(), vec![vec![b.clone()]])?))
                }
                None => None,
            },
        })
    }

    fn table_exist(&self, name: &str) -> bool {
        match self.kind {
            SchemaKind::Public | SchemaKind::Dml => self.r.schema().table(&self.r.db, name).is_some(),
            SchemaKind::PgCatalog => PG_CATALOG.contains(name),
            SchemaKind::InformationSchema => INFORMATION_SCHEMA.contains(name),
            SchemaKind::Tessera => TESSERA.contains(name),
            SchemaKind::Scratch => self.r.scratch.lock().contains_key(name),
        }
    }
}

/// A DataFusion context for one session.
pub fn new_context(resolver: Resolver) -> SessionContext {
    let db = resolver.db.clone();
    let info = resolver.info.clone();
    let zone: crate::values::tz::ZoneSource = Arc::new(move || info.settings.lock().hot().zone);
    let mut config = SessionConfig::new()
        .with_target_partitions(1)
        .with_information_schema(false)
        .with_create_default_catalog_and_schema(false)
        .with_default_catalog_and_schema(db.clone(), "public");
    let options = config.options_mut();
    options.sql_parser.dialect = Dialect::PostgreSQL;
    options.sql_parser.map_string_types_to_utf8view = false;
    options.sql_parser.parse_float_as_decimal = true;
    options.sql_parser.enable_ident_normalization = true;
    options.execution.time_zone = Some("+00:00".into());
    // Constants compared with columns are read as PostgreSQL reads them
    // before DataFusion's type coercion reads them its own way.
    let mut analyzer: Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> = vec![
        Arc::new(crate::values::int_literals::IntegerLiterals),
        Arc::new(crate::values::union_literals::UnionLiterals),
        Arc::new(crate::values::intervals::IntervalRules),
        Arc::new(crate::rewrite::strict::ComparedConstants { zone: zone.clone() }),
        Arc::new(crate::rewrite::window_defaults::ShiftDefaults),
        Arc::new(crate::values::numeric_special::FloatOnlyOfNumeric),
        Arc::new(crate::values::float_compare::NumericFloatComparisons),
        Arc::new(crate::values::float_unions::FloatCommonTypes),
    ];
    analyzer.extend(datafusion::optimizer::Analyzer::new().rules);
    analyzer.push(Arc::new(crate::values::timestamp_units::TextTimestamps { zone: zone.clone() }));
    analyzer.push(Arc::new(crate::values::exact_casts::KeepMergingCasts));
    analyzer.push(Arc::new(crate::rewrite::strict::CheckedConstants));
    analyzer.push(Arc::new(crate::values::int_casts::IntegerCasts));
    analyzer.push(Arc::new(crate::values::float_arith::FloatArithmetic));
    analyzer.push(Arc::new(crate::values::numeric_ops::WideArithmetic));
    analyzer.push(Arc::new(crate::values::array_fns::AnyParameters));
    analyzer.push(Arc::new(crate::values::enums::EnumOrder));
    analyzer.push(Arc::new(crate::values::interval_groups::IntervalGroups));
    analyzer.push(Arc::new(crate::values::numeric_div::NumericDivision));
    analyzer.push(Arc::new(crate::values::json::JsonConcat));
    analyzer.push(Arc::new(crate::values::local_time::SessionTimeZone { zone: zone.clone() }));
    // Last: it guards the computations the rules above may have made.
    analyzer.push(Arc::new(crate::values::numeric_special::NumericSpecials));
    let mut builder = datafusion::execution::session_state::SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_analyzer_rules(analyzer)
        .with_type_planner(Arc::new(crate::values::timestamp_units::MicrosecondTypes))
        .with_physical_optimizer_rule(Arc::new(crate::values::overflow::CheckedArithmetic));
    // Before DataFusion's own, which would take a jsonb subscript for a
    // struct field or a list element.
    if let Some(planners) = builder.expr_planners() {
        planners.insert(0, Arc::new(crate::values::json_subscript::JsonbSubscriptPlanner));
    }
    let state = builder.build();
    let mut ctx = SessionContext::new_with_state(state);
    datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx,
        Arc::new(crate::values::numeric_div::ExactNumericPlanner),
    )
    .expect("registering a planner");
    datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx,
        Arc::new(crate::values::intervals::IntervalArithmeticPlanner),
    )
    .expect("registering a planner");
    datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx,
        Arc::new(crate::values::json_delete::JsonbMinusPlanner),
    )
    .expect("registering a planner");
    datafusion::execution::FunctionRegistry::register_expr_planner(
        &mut ctx,
        Arc::new(crate::values::arith_literals::UnknownLiteralPlanner),
    )
    .expect("registering a planner");

    ctx.register_catalog(db, Arc::new(TesseraCatalog(resolver.clone())));
    crate::plan::functions::register(&ctx, &resolver);
    crate::rewrite::strict::register(&ctx);
    crate::values::int_casts::register(&ctx);
    crate::values::float_arith::register(&ctx);
    crate::values::pg_typeof::register(&ctx);
    crate::system::regtype::register(&ctx, &resolver);
    crate::values::bpchar::register(&ctx);
    crate::values::enums::register(&ctx);
    crate::values::formatting::register(&ctx);
    crate::values::small_fns::register(&ctx);
    crate::values::encoding::register(&ctx);
    crate::values::date_fields::register(&ctx);
    crate::values::datetime_fns::register(&ctx, zone.clone());
    crate::values::local_time::register(&ctx);
    let started = resolver.info.clone();
    crate::values::timestamp_units::register(
        &ctx,
        Arc::new(move || match started.block_started.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            at => Some(at),
        }),
    );
    crate::values::to_timestamp::register(&ctx, zone.clone());
    crate::values::numeric_div::register(&ctx);
    crate::values::numeric_ops::register(&ctx);
    crate::values::numeric_var::register(&ctx);
    crate::values::to_char_numeric::register(&ctx);
    crate::values::numeric_special::register(&ctx);
    crate::values::real_sum::register(&ctx);
    crate::values::intervals::register(&ctx);
    crate::values::json::register(&ctx);
    crate::values::json_delete::register(&ctx);
    crate::values::json_sets::register(&ctx);
    crate::values::json_more::register(&ctx);
    crate::values::regexps::register(&ctx);
    crate::values::regexp_pg::register(&ctx);
    crate::values::array_fns::register(&ctx);
    crate::values::array_types::register(&ctx);
    crate::values::to_char::register(&ctx);
    crate::values::zones::register(&ctx);
    ctx
}
