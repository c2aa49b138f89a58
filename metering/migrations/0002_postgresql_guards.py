"""PostgreSQL guards of metering (the demo's SQLite has none; the services check the same rules):

- (RAISE placeholders are doubled, %%, as the step runs with parameters.)
- A closed billing period is immutable: its usage, capacity, report lines and adjustments cannot be
  inserted, updated or deleted, and the period row itself cannot change or go. Raised as
  restrict_violation (23001), which Django surfaces as IntegrityError.
- Rate cards of one GPU model and flavor never overlap in time: an exclusion constraint on the
  half-open range [effective_from, effective_to).
"""

from django.db import migrations

from gpuplatform.db.migration_sql import on_postgresql

GUARDED = ("metering_usagehour", "metering_capacityhour", "metering_reportline", "metering_adjustment")

CLOSED_GUARD = """
CREATE OR REPLACE FUNCTION metering_closed_period_guard() RETURNS trigger AS $$
DECLARE
    closed_label text;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        SELECT label INTO closed_label FROM metering_billingperiod WHERE id = OLD.period_id AND state = 'closed';
    END IF;
    IF closed_label IS NULL AND TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT label INTO closed_label FROM metering_billingperiod WHERE id = NEW.period_id AND state = 'closed';
    END IF;
    IF closed_label IS NOT NULL THEN
        RAISE EXCEPTION 'billing period %% is closed: %% on %% refused', closed_label, TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION metering_closed_period_row_guard() RETURNS trigger AS $$
BEGIN
    IF OLD.state = 'closed' THEN
        RAISE EXCEPTION 'billing period %% is closed: %% refused', OLD.label, TG_OP
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER metering_closed_period_row BEFORE UPDATE OR DELETE ON metering_billingperiod
FOR EACH ROW EXECUTE FUNCTION metering_closed_period_row_guard();
""" + "".join(
    f"""
CREATE TRIGGER metering_closed_period BEFORE INSERT OR UPDATE OR DELETE ON {table}
FOR EACH ROW EXECUTE FUNCTION metering_closed_period_guard();
"""
    for table in GUARDED
)

DROP_CLOSED_GUARD = (
    "".join(f"DROP TRIGGER IF EXISTS metering_closed_period ON {table};\n" for table in GUARDED)
    + """
DROP TRIGGER IF EXISTS metering_closed_period_row ON metering_billingperiod;
DROP FUNCTION IF EXISTS metering_closed_period_row_guard();
DROP FUNCTION IF EXISTS metering_closed_period_guard();
"""
)

NO_OVERLAP = """
CREATE EXTENSION IF NOT EXISTS btree_gist;
ALTER TABLE metering_ratecard ADD CONSTRAINT ratecard_no_overlap EXCLUDE USING gist (
    gpu_model WITH =,
    (coalesce(flavor_id::text, '')) WITH =,
    tstzrange(effective_from, effective_to, '[)') WITH &&
);
"""

DROP_NO_OVERLAP = "ALTER TABLE metering_ratecard DROP CONSTRAINT IF EXISTS ratecard_no_overlap;"


class Migration(migrations.Migration):
    dependencies = [("metering", "0001_initial")]

    operations = [
        migrations.RunPython(on_postgresql(CLOSED_GUARD), on_postgresql(DROP_CLOSED_GUARD)),
        migrations.RunPython(on_postgresql(NO_OVERLAP), on_postgresql(DROP_NO_OVERLAP)),
    ]
