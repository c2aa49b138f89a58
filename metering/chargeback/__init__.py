"""Pure chargeback (DESIGN §3, §5.5): the in-hour card-hour split and the period's priced report.

No Django, no Celery: plain dataclasses in, plain dataclasses out, Fraction and Decimal arithmetic.
"""
