//! The HTTP API: list, get and create orders, each priced from the store's
//! products through a per-request price cache.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use perf_trace_core::{count, traced_phase};
use serde::{Deserialize, Serialize};

use crate::keys::{Phase, PriceCache};
use crate::store::{Order, OrderLine, OrderStore, Product};

/// The store the handlers share: counted when tracing is on, plain otherwise.
pub type SharedStore = Arc<dyn OrderStore>;

/// An error answered as JSON: `{"error": code, "message": ...}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.code, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

/// An order with its total, as answered.
#[derive(Debug, Serialize)]
pub struct PricedOrder {
    /// The order id.
    pub id: u64,
    /// Its lines.
    pub lines: Vec<OrderLine>,
    /// Sum of unit price times quantity, in cents.
    pub total_cents: u64,
}

/// The body of `POST /orders`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewOrder {
    /// The lines; at least one, each with a known product and a quantity above zero.
    pub lines: Vec<OrderLine>,
}

/// The API's routes over `store`.
pub fn router(store: SharedStore) -> Router {
    Router::new()
        .route("/orders", get(list_orders).post(create_order))
        .route("/orders/{id}", get(get_order))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .with_state(store)
}

#[traced_phase(Phase::Load)]
fn load_all(store: &dyn OrderStore) -> Vec<Order> {
    store.list_orders()
}

#[traced_phase(Phase::Load)]
fn load_one(store: &dyn OrderStore, id: u64) -> Option<Order> {
    store.get_order(id)
}

/// Prices `orders`, reading each product once per request.
#[traced_phase(Phase::Price)]
fn price(store: &dyn OrderStore, orders: Vec<Order>) -> Result<Vec<PricedOrder>, ApiError> {
    let mut cache: HashMap<u32, Product> = HashMap::new();
    orders
        .into_iter()
        .map(|order| {
            let mut total_cents = 0;
            for line in &order.lines {
                let product = match cache.get(&line.product) {
                    Some(product) => {
                        count(PriceCache::Hit);
                        *product
                    }
                    None => {
                        count(PriceCache::Miss);
                        let product = store.get_product(line.product).ok_or_else(|| {
                            ApiError::new(
                                StatusCode::UNPROCESSABLE_ENTITY,
                                "unknown_product",
                                format!("product {} does not exist", line.product),
                            )
                        })?;
                        cache.insert(line.product, product);
                        product
                    }
                };
                total_cents += product.price_cents * u64::from(line.quantity);
            }
            Ok(PricedOrder {
                id: order.id,
                lines: order.lines,
                total_cents,
            })
        })
        .collect()
}

async fn list_orders(State(store): State<SharedStore>) -> Result<Json<Vec<PricedOrder>>, ApiError> {
    let orders = load_all(&*store);
    Ok(Json(price(&*store, orders)?))
}

async fn get_order(
    State(store): State<SharedStore>,
    Path(id): Path<String>,
) -> Result<Json<PricedOrder>, ApiError> {
    let id: u64 = id.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_order_id",
            "an order id is a positive integer",
        )
    })?;
    let order = load_one(&*store, id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "order_not_found",
            "no order with this id",
        )
    })?;
    let mut priced = price(&*store, vec![order])?;
    Ok(Json(priced.remove(0)))
}

async fn create_order(
    State(store): State<SharedStore>,
    body: Result<Json<NewOrder>, JsonRejection>,
) -> Result<(StatusCode, Json<PricedOrder>), ApiError> {
    let Json(new) = body.map_err(|rejection| {
        ApiError::new(rejection.status(), "bad_order", rejection.body_text())
    })?;
    if new.lines.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_order",
            "an order has at least one line",
        ));
    }
    if new.lines.iter().any(|line| line.quantity == 0) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "zero_quantity",
            "every line has a quantity above zero",
        ));
    }
    // Priced before it is stored: an order naming an unknown product is
    // refused and nothing is written.
    let draft = Order {
        id: 0,
        lines: new.lines,
    };
    let priced = price(&*store, vec![draft])?.remove(0);
    let order = store.insert_order(priced.lines);
    Ok((
        StatusCode::CREATED,
        Json(PricedOrder {
            id: order.id,
            lines: order.lines,
            total_cents: priced.total_cents,
        }),
    ))
}
