"""The audit log is append-only on PostgreSQL (the demo's SQLite has no guard; no code changes an
event): an UPDATE or DELETE of an event is refused, except the one change the schema itself makes,
the actor set to NULL when that user is deleted (``on_delete=SET_NULL``; ``actor_label`` keeps the
name). TRUNCATE, which only a database owner runs, is not a row change and is not guarded.
(RAISE placeholders are doubled, %%, as the step runs with parameters.)"""

from django.db import migrations

from gpuplatform.db.migration_sql import on_postgresql

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION audit_append_only_guard() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: %% of event %% refused', TG_OP, OLD.id
        USING ERRCODE = 'restrict_violation';
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit_auditevent
FOR EACH ROW EXECUTE FUNCTION audit_append_only_guard();
"""

DROP_APPEND_ONLY = """
DROP TRIGGER IF EXISTS audit_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_append_only_guard();
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(on_postgresql(APPEND_ONLY), on_postgresql(DROP_APPEND_ONLY))]
