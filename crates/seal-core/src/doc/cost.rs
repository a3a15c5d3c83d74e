//! CostReservation/1: the worst case of both slots, written before any judge is called.

use serde::{Deserialize, Serialize};

use crate::ids::RollId;

pub const COST_RESERVATION: &str = "CostReservation/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlotPrice {
    pub model: String,
    pub input_rmb_per_m_tok: f64,
    pub output_rmb_per_m_tok: f64,
    pub image_rmb: f64,
    pub max_attempts: u32,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub images: u64,
    pub worst_case_rmb: f64,
    /// The sha256 of the request this slot's attempts send (every attempt of a slot sends the
    /// same bytes). With the reservation's MAC it authenticates a stored request after a
    /// restart under another configuration (`judge::reservation`). Absent in reservations
    /// made before it existed and in a guard-blocked roll's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sha256: Option<crate::canonical::Hash>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    pub a: SlotPrice,
    pub b: SlotPrice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CostReservation {
    pub schema_version: String,
    pub roll_id: RollId,
    pub budget_rmb: f64,
    pub spent_before_rmb: f64,
    pub reserved_rmb: f64,
    pub within_budget: bool,
    pub price_table: PriceTable,
    /// `hmac-sha256:<hex>` under the deployment's seed salt (`judge::reservation`): this
    /// deployment reserved this roll. Only a resume checks it; an auditor has no salt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_mac: Option<String>,
}
