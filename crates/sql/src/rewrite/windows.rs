//! Named windows (`WINDOW w AS (…)`) written out where they are used.
//!
//! `sum(x) OVER (w ROWS BETWEEN …)` refines the window `w`: in PostgreSQL
//! it keeps `w`'s PARTITION BY and ORDER BY and adds the frame. DataFusion
//! drops `w`'s ORDER BY there, so a running sum over `w` became a sum over
//! the whole partition, a silent wrong answer. Before planning, every
//! `OVER w` and `OVER (w …)` of a select's list is replaced by the window
//! it names, written out in full (a window defined from another is
//! resolved first); the select's own WINDOW clause is left as it was.

use std::collections::HashMap;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, NamedWindowExpr, Query, Select, SelectItem, SetExpr, Statement, VisitMut, VisitorMut, WindowSpec,
    WindowType,
};

/// Writes out the named windows of every select in `stmt`.
pub fn inline_named_windows(stmt: &mut Statement) {
    struct Selects;
    impl VisitorMut for Selects {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> std::ops::ControlFlow<()> {
            inline_in_set(q.body.as_mut());
            std::ops::ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Selects);
}

fn inline_in_set(set: &mut SetExpr) {
    match set {
        SetExpr::Select(select) => inline_in_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            inline_in_set(left);
            inline_in_set(right);
        }
        _ => {}
    }
}

fn key(i: &Ident) -> String {
    if i.quote_style.is_some() { i.value.clone() } else { i.value.to_lowercase() }
}

/// The select's windows by name, each written out in full.
fn resolved_windows(select: &Select) -> HashMap<String, WindowSpec> {
    let mut out: HashMap<String, WindowSpec> = HashMap::new();
    // Definitions may name earlier ones; a few passes settle any order.
    for _ in 0..select.named_window.len().max(1) {
        for def in &select.named_window {
            let spec = match &def.1 {
                NamedWindowExpr::NamedWindow(other) => out.get(&key(other)).cloned(),
                NamedWindowExpr::WindowSpec(spec) => Some(merged(spec, &out)),
            };
            if let Some(spec) = spec {
                out.insert(key(&def.0), spec);
            }
        }
    }
    out
}

/// `spec` with the window it names (if any) written into it.
fn merged(spec: &WindowSpec, windows: &HashMap<String, WindowSpec>) -> WindowSpec {
    let Some(base) = spec.window_name.as_ref().and_then(|n| windows.get(&key(n))) else { return spec.clone() };
    WindowSpec {
        window_name: None,
        partition_by: if spec.partition_by.is_empty() { base.partition_by.clone() } else { spec.partition_by.clone() },
        order_by: if spec.order_by.is_empty() { base.order_by.clone() } else { spec.order_by.clone() },
        window_frame: spec.window_frame.clone().or_else(|| base.window_frame.clone()),
    }
}

fn inline_in_select(select: &mut Select) {
    if select.named_window.is_empty() {
        return;
    }
    let windows = resolved_windows(select);
    /// Rewrites the window functions of one select-list item, not those
    /// of its subqueries (`depth` counts the queries entered), which have
    /// windows of their own.
    struct Over<'a> {
        windows: &'a HashMap<String, WindowSpec>,
        depth: usize,
    }
    impl VisitorMut for Over<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut Query) -> std::ops::ControlFlow<()> {
            self.depth += 1;
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> std::ops::ControlFlow<()> {
            self.depth -= 1;
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut Expr) -> std::ops::ControlFlow<()> {
            if self.depth == 0
                && let Expr::Function(f) = e
            {
                let spec = match &f.over {
                    Some(WindowType::NamedWindow(name)) => self.windows.get(&key(name)).cloned(),
                    Some(WindowType::WindowSpec(spec)) if spec.window_name.is_some() => {
                        Some(merged(spec, self.windows))
                    }
                    _ => None,
                };
                if let Some(spec) = spec {
                    f.over = Some(WindowType::WindowSpec(spec));
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            let _ = e.visit(&mut Over { windows: &windows, depth: 0 });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_refined_by_a_frame_keeps_its_order() {
        let mut stmt = crate::plan::parse_sql(
            "SELECT sum(u) OVER (w ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING), max(u) OVER v FROM t \
             WINDOW w AS (PARTITION BY g ORDER BY f), v AS (w)",
        )
        .unwrap()
        .pop()
        .unwrap();
        inline_named_windows(&mut stmt);
        let text = stmt.to_string();
        assert!(
            text.contains("OVER (PARTITION BY g ORDER BY f ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)"),
            "{text}"
        );
        assert!(text.contains("max(u) OVER (PARTITION BY g ORDER BY f)"), "{text}");
    }
}
