-- How many times a dead letter's message was handed to a handler (DeadLetter.deliveries,
-- docs/adr/062-delivery-limit.md). With `attempts` it tells the two bounds apart: a handler
-- that threw until INBOX_MAX_RETRIES ran out shows attempts = deliveries = retries + 1; a
-- message whose consumer died holding it every time (INBOX_MAX_DELIVERIES) shows attempts 1
-- and deliveries = that limit. NULL for letters audited before the transports counted (a
-- nullable column without a default: adding it rewrites nothing).
alter table dead_letter_audit add column deliveries integer check (deliveries >= 0);
