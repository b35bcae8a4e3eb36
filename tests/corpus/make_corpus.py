#!/usr/bin/env python3
"""Generates the data corpus: CSV files as they come from real exports.

    make_corpus.py OUT_DIR [--cases a,b] [--seed N]

Each case is a directory OUT_DIR/NAME holding a training file, an evaluation
file and case.json, which says how to read the files (delimiter, decimal
mark, each column's role for the baseline) and what is expected:

  "expect": "trains"  dtf's metric on the evaluation file must reach the
                      baseline's minus "margin";
  "expect": "error"   the step "error.steps" names must exit non-zero with
                      every string of "error.fragments" in its standard
                      error (case-insensitive) and the place "error.place"
                      (FILE:LINE, the file's base name). "require_metrics" names
keys dtf train's --metrics-out must hold besides the metric.

Only the standard library is used, with one random.Random per case seeded
by the case name, so the files are the same on every machine and run.
"""

import argparse
import csv
import datetime
import json
import math
import os
import random
import sys
import uuid

SEED = 13


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def draw(rng, z):
    """A 0/1 label that is 1 with probability sigmoid(z)."""
    return 1 if rng.random() < sigmoid(z) else 0


def write_csv(path, header, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=delimiter, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def rnd(x, digits=2):
    return f"{x:.{digits}f}"


# ---------------------------------------------------------------------------
# Generators: each returns (header, train_rows, eval_rows, meta).


def churn_rows(rng, n, id_start=None):
    """Subscription churn: the signal is in age, plan, spend and tickets."""
    plans = {"basic": 0.9, "plus": 0.3, "pro": -0.4, "enterprise": -1.1}
    regions = ["north", "south", "east", "west", "central"]
    rows = []
    for _ in range(n):
        age = rng.randint(18, 80)
        plan = rng.choice(list(plans))
        spend = max(5.0, rng.gauss(60, 25))
        tickets = min(int(rng.expovariate(0.6)), 12)
        tenure = rng.randint(1, 96)
        region = rng.choice(regions)
        z = (-0.03 * (age - 45) + plans[plan] + 0.45 * (tickets - 1.5)
             - 0.015 * (spend - 60) - 0.02 * (tenure - 48) - 0.2)
        rows.append([age, plan, rnd(spend), tickets, tenure, region,
                     draw(rng, z)])
    return rows


CHURN_HEADER = ["age", "plan", "monthly_spend", "support_tickets",
                "tenure_months", "region", "churned"]
CHURN_ROLES = {"age": "numeric", "plan": "categorical",
               "monthly_spend": "numeric", "support_tickets": "numeric",
               "tenure_months": "numeric", "region": "categorical"}


def gen_id_columns(rng):
    train = churn_rows(rng, 4000)
    evl = churn_rows(rng, 1000)
    # Ids given in signup order: in the training file the id follows the
    # tenure (and so the label); evaluation users signed up later.
    train.sort(key=lambda r: -r[4])
    out_train, out_eval = [], []
    for i, r in enumerate(train):
        u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        out_train.append([10001 + i, u] + r)
    ids = list(range(50001, 50001 + len(evl)))
    rng.shuffle(ids)
    for i, r in zip(ids, evl):
        u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        out_eval.append([i, u] + r)
    rng.shuffle(out_train)
    header = ["user_id", "account_uuid"] + CHURN_HEADER
    roles = dict(CHURN_ROLES, user_id="id", account_uuid="id")
    return header, out_train, out_eval, {
        "label": "churned", "task": "binary", "metric": "auc",
        "margin": 0.03, "roles": roles}


POS_ADJ = ["great", "excellent", "amazing", "fantastic", "wonderful",
           "perfect", "solid", "sturdy", "comfortable", "reliable"]
NEG_ADJ = ["terrible", "awful", "flimsy", "useless", "disappointing",
           "poor", "cheap", "broken", "defective", "uncomfortable"]
POS_VERB = ["love", "enjoy", "recommend", "adore", "appreciate"]
NEG_VERB = ["regret", "hate", "returned", "dislike", "refunded"]
NOUNS = ["blender", "jacket", "lamp", "headphones", "backpack", "kettle",
         "keyboard", "chair", "tent", "watch", "shoes", "vacuum"]
PEOPLE = ["wife", "husband", "son", "daughter", "office", "kitchen",
          "camping trip", "dad", "mom", "roommate"]
FILLER = ["Arrived on Tuesday.", "Packaging was plain.",
          "I use it every day.", "Bought it on sale.",
          "Color matches the photos.", "Took a week to ship.",
          "My second one from this brand.", "Assembly took ten minutes.",
          "", "", ""]


def sentence(rng, positive, noun):
    adj = rng.choice(POS_ADJ if positive else NEG_ADJ)
    verb = rng.choice(POS_VERB if positive else NEG_VERB)
    other = rng.choice(NEG_ADJ if positive else POS_ADJ)
    forms = [
        f"The {noun} is {adj}.",
        f"Really {adj} {noun}, I {verb} it.",
        f"I {verb} this {noun}!",
        f"Quality is {adj} for the price.",
        f"Not {other} at all, honestly {adj}.",
        f"\"{adj.capitalize()}\" is the word, would buy again."
        if positive else f"\"{adj.capitalize()}\" is the word, never again.",
        f"After a month: {adj}, and I {verb} it.",
    ]
    return rng.choice(forms)


def review_rows(rng, n):
    cats = ["home", "outdoor", "electronics", "clothing", "kitchen"]
    rows = []
    for _ in range(n):
        positive = rng.random() < 0.55
        noun = rng.choice(NOUNS)
        parts = [f"Got this {noun} for my {rng.choice(PEOPLE)}."
                 if rng.random() < 0.4 else ""]
        parts.append(sentence(rng, positive, noun))
        if rng.random() < 0.5:
            parts.append(sentence(rng, positive, noun))
        if rng.random() < 0.15:  # a sentence against the overall verdict
            parts.append(sentence(rng, not positive, noun))
        parts.append(rng.choice(FILLER))
        rng.shuffle(parts)
        text = " ".join(p for p in parts if p)
        label = int(positive)
        if rng.random() < 0.05:
            label = 1 - label
        rows.append([rng.choice(cats), rng.randint(0, 40), text, label])
    return rows


def gen_free_text(rng):
    return (["product_category", "helpful_votes", "review", "recommended"],
            review_rows(rng, 4000), review_rows(rng, 1000), {
                "label": "recommended", "task": "binary", "metric": "auc",
                "margin": 0.03,
                "roles": {"product_category": "categorical",
                          "helpful_votes": "numeric", "review": "text"}})


def date_rows(rng, n):
    start = datetime.date(2022, 1, 1)
    rows = []
    for _ in range(n):
        order = start + datetime.timedelta(days=rng.randint(0, 3 * 365 - 1))
        delivery = order + datetime.timedelta(days=rng.randint(1, 9))
        items = rng.randint(1, 8)
        z = (1.8 * (order.month in (11, 12)) - 0.9 * (order.month in (1, 2))
             + 1.5 * (delivery.weekday() >= 5) + 0.1 * (items - 4) - 0.9)
        rows.append([order.isoformat(), delivery.strftime("%m/%d/%Y"), items,
                     draw(rng, z)])
    return rows


def gen_dates(rng):
    return (["order_date", "delivery_date", "items", "returned"],
            date_rows(rng, 4000), date_rows(rng, 1000), {
                "label": "returned", "task": "binary", "metric": "auc",
                "margin": 0.03,
                "roles": {"order_date": "date:%Y-%m-%d",
                          "delivery_date": "date:%m/%d/%Y",
                          "items": "numeric"}})


MISSING_TOKENS = ["NaN", "nan", "NA", "null", ""]


def maybe_missing(rng, text, rate=0.12):
    return rng.choice(MISSING_TOKENS) if rng.random() < rate else text


def weather_rows(rng, n):
    stations = ["airport", "harbor", "hill", "valley", "downtown"]
    rows = []
    for _ in range(n):
        temp = rng.gauss(15, 8)
        pressure = rng.gauss(1013, 9)
        humidity = min(100.0, max(5.0, rng.gauss(65, 18)))
        wind = abs(rng.gauss(12, 7))
        st = rng.choice(stations)
        z = (-0.12 * (pressure - 1013) + 0.06 * (humidity - 65)
             + 0.05 * (wind - 12) - 0.03 * (temp - 15)
             + (0.6 if st == "harbor" else 0.0) - 0.3)
        rows.append([maybe_missing(rng, rnd(temp, 1)),
                     maybe_missing(rng, rnd(pressure, 1)),
                     maybe_missing(rng, rnd(humidity, 1)),
                     maybe_missing(rng, rnd(wind, 1)), st, draw(rng, z)])
    return rows


def gen_nan_numbers(rng):
    return (["temperature", "pressure", "humidity", "wind_kmh", "station",
             "rain_tomorrow"],
            weather_rows(rng, 4000), weather_rows(rng, 1000), {
                "label": "rain_tomorrow", "task": "binary", "metric": "auc",
                "margin": 0.03,
                "roles": {"temperature": "numeric", "pressure": "numeric",
                          "humidity": "numeric", "wind_kmh": "numeric",
                          "station": "categorical"}})


def house_rows(rng, n, missing=0.1, price_digits=1):
    """House prices in thousands (a float) or, with price_digits 0, in
    dollars (an int with a thousand distinct values)."""
    hoods = {"riverside": 60000, "old_town": 25000, "suburbs": 0,
             "industrial": -40000, "hills": 90000}
    rows = []
    for _ in range(n):
        sqft = max(400.0, rng.gauss(1800, 600))
        beds = max(1, min(6, round(sqft / 600 + rng.gauss(0, 0.7))))
        lot = max(0.05, rng.gauss(0.3, 0.15))
        age = rng.randint(0, 90)
        hood = rng.choice(list(hoods))
        price = (50000 + 140 * sqft + 8000 * beds + 90000 * lot - 900 * age
                 + hoods[hood] + rng.gauss(0, 30000))
        if price_digits:
            price /= 1000
        rows.append([maybe_missing(rng, rnd(sqft, 0), missing),
                     maybe_missing(rng, str(beds), missing),
                     maybe_missing(rng, rnd(lot, 3), missing),
                     maybe_missing(rng, str(age), missing), hood,
                     rnd(price, price_digits)])
    return rows


HOUSE_ROLES = {"sqft": "numeric", "bedrooms": "numeric",
               "lot_acres": "numeric", "age_years": "numeric",
               "neighborhood": "categorical"}


def gen_nan_regression(rng):
    return (["sqft", "bedrooms", "lot_acres", "age_years", "neighborhood",
             "price_k"],
            house_rows(rng, 4000), house_rows(rng, 1000), {
                "label": "price_k", "task": "regression", "metric": "r2",
                "margin": 0.05,
                "roles": HOUSE_ROLES})


def gen_integer_target(rng):
    """Whole-dollar prices: an int label with many values is a quantity to
    regress on, not a thousand classes."""
    return (["sqft", "bedrooms", "lot_acres", "age_years", "neighborhood",
             "price"],
            house_rows(rng, 4000, 0.0, 0), house_rows(rng, 1000, 0.0, 0), {
                "label": "price", "task": "regression", "metric": "r2",
                "margin": 0.05, "roles": HOUSE_ROLES})


def shop_rows(rng, n):
    channels = ["web", "app", "store", "phone"]
    rows = []
    for _ in range(n):
        price = math.exp(rng.uniform(math.log(150), math.log(6000)))
        income = round(rng.uniform(1500, 12000), -2)
        discount = rng.choice([0.0, 5.0, 10.0, 12.5, 20.0, 25.0, 33.3, 40.0,
                               52.6, 60.0])
        ch = rng.choice(channels)
        z = (-1.1 * (math.log(price) - math.log(950)) + 0.00025 * (income - 6000)
             + 0.05 * (discount - 20) + (0.5 if ch == "app" else 0.0))
        rows.append([f"${price:,.2f}", f"{income:,.0f}", f"{discount}%", ch,
                     draw(rng, z)])
    return rows


def gen_currency_percent(rng):
    return (["list_price", "monthly_income", "discount", "channel",
             "purchased"],
            shop_rows(rng, 4000), shop_rows(rng, 1000), {
                "label": "purchased", "task": "binary", "metric": "auc",
                "margin": 0.03,
                "roles": {"list_price": "currency",
                          "monthly_income": "currency",
                          "discount": "currency", "channel": "categorical"}})


def part_rows(rng, n):
    lines = ["A", "B", "C"]
    rows = []
    for _ in range(n):
        length = rng.gauss(3.14, 0.4)
        width = rng.gauss(1.5, 0.2)
        weight = rng.gauss(250, 30)
        line = rng.choice(lines)
        z = (3.0 * (length - 3.14) - 4.0 * (width - 1.5)
             + 0.03 * (weight - 250) + (0.8 if line == "C" else 0.0) - 0.3)
        rows.append([f"{length:.2f}".replace(".", ","),
                     f"{width:.3f}".replace(".", ","),
                     f"{weight:.1f}".replace(".", ","), line, draw(rng, z)])
    return rows


def gen_decimal_comma(rng):
    return (["laenge", "breite", "gewicht", "linie", "defekt"],
            part_rows(rng, 4000), part_rows(rng, 1000), {
                "label": "defekt", "task": "binary", "metric": "auc",
                "margin": 0.03, "delimiter": ";", "decimal": ",",
                "roles": {"laenge": "numeric", "breite": "numeric",
                          "gewicht": "numeric", "linie": "categorical"}})


TRUE_SPELLINGS = ["true", "True", "TRUE", "yes", "Yes", "YES", "y", "Y", "1"]
FALSE_SPELLINGS = ["false", "False", "FALSE", "no", "No", "NO", "n", "N", "0"]


def spell(rng, value):
    return rng.choice(TRUE_SPELLINGS if value else FALSE_SPELLINGS)


def signup_rows(rng, n):
    rows = []
    for _ in range(n):
        card = rng.random() < 0.5
        active = rng.random() < 0.6
        news = rng.random() < 0.4
        verified = rng.random() < 0.7
        visits = rng.randint(0, 30)
        z = (1.4 * card + 1.0 * active - 0.9 * news + 0.8 * verified
             + 0.05 * (visits - 15) - 1.6)
        rows.append([spell(rng, card), spell(rng, active),
                     rng.choice(["y", "Y"] if news else ["n", "N"]),
                     "1" if verified else "0", visits,
                     "yes" if draw(rng, z) else "no"])
    return rows


def gen_booleans(rng):
    return (["has_card", "is_active", "newsletter", "verified", "visits",
             "converted"],
            signup_rows(rng, 4000), signup_rows(rng, 1000), {
                "label": "converted", "task": "binary", "metric": "auc",
                "margin": 0.03,
                "roles": {"has_card": "bool", "is_active": "bool",
                          "newsletter": "bool", "verified": "bool",
                          "visits": "numeric"}})


CITIES = ["Portland, OR", "Austin, TX", "Boston, MA", "Denver, CO",
          "Miami, FL", "Chicago, IL"]
TITLES = ["Engineer, Platform", "Engineer, Data", "Manager, Sales",
          "Analyst", "Designer, Product", "Support Lead"]


def offer_rows(rng, n):
    city_fx = dict(zip(CITIES, [0.6, 0.2, -0.3, 0.0, -0.6, 0.1]))
    title_fx = dict(zip(TITLES, [0.5, 0.3, -0.4, 0.0, -0.2, -0.5]))
    rows = []
    for _ in range(n):
        city, title = rng.choice(CITIES), rng.choice(TITLES)
        years = rng.randint(0, 25)
        offer = round(rng.gauss(95000, 20000), -3)
        z = (city_fx[city] + title_fx[title] + 0.00006 * (offer - 95000)
             - 0.06 * (years - 8))
        rows.append([title, city, years, f"{offer:.0f}", draw(rng, z)])
    return rows


def gen_delimited(delimiter):
    def gen(rng):
        return (["job_title", "city", "years_experience", "offer_usd",
                 "accepted"],
                offer_rows(rng, 4000), offer_rows(rng, 1000), {
                    "label": "accepted", "task": "binary", "metric": "auc",
                    "margin": 0.03, "delimiter": delimiter,
                    "roles": {"job_title": "categorical",
                              "city": "categorical",
                              "years_experience": "numeric",
                              "offer_usd": "numeric"}})
    return gen


def fraud_rows(rng, n):
    merchants = ["grocery", "fuel", "travel", "electronics", "gaming",
                 "restaurant", "online"]
    m_fx = dict(zip(merchants, [-1.0, -0.5, 0.8, 1.0, 1.3, -0.6, 0.6]))
    rows = []
    for _ in range(n):
        amount = math.exp(rng.gauss(3.5, 1.2))
        hour = rng.randint(0, 23)
        merchant = rng.choice(merchants)
        n_24h = min(int(rng.expovariate(0.5)), 20)
        foreign = rng.random() < 0.1
        z = (0.7 * (math.log(amount) - 3.5) + 1.2 * (hour <= 4)
             + m_fx[merchant] + 0.25 * n_24h + 1.3 * foreign)
        noise = rng.gauss(0, 1.0)
        rows.append([rnd(amount), hour, merchant, n_24h,
                     "yes" if foreign else "no", z + noise])
    return rows


def gen_imbalanced(rng):
    train, evl = fraud_rows(rng, 10000), fraud_rows(rng, 4000)
    scores = sorted(r[-1] for r in train)
    cut = scores[int(0.99 * len(scores))]
    for r in train + evl:
        r[-1] = 1 if r[-1] > cut else 0
    return (["amount", "hour", "merchant", "tx_last_24h", "foreign",
             "is_fraud"], train, evl, {
                "label": "is_fraud", "task": "binary", "metric": "auc",
                "margin": 0.03,
                "require_metrics": ["precision", "recall", "pr_auc"],
                "roles": {"amount": "numeric", "hour": "numeric",
                          "merchant": "categorical",
                          "tx_last_24h": "numeric",
                          "foreign": "categorical"}})


def wide_rows(rng, n, noise_cols):
    grp_fx = {"a": -1.0, "b": -0.3, "c": 0.4, "d": 1.0}
    rows = []
    for _ in range(n):
        x = rng.gauss(0, 1)
        grp = rng.choice(list(grp_fx))
        noise = [f"v{rng.randint(0, 39):02d}" for _ in range(noise_cols)]
        rows.append([rnd(x, 3), grp] + noise + [draw(rng, 1.2 * x + grp_fx[grp])])
    return rows


def gen_wide_overfit(rng):
    k = 40
    names = [f"attr_{i:02d}" for i in range(k)]
    roles = {"signal": "numeric", "group": "categorical"}
    roles.update({n: "categorical" for n in names})
    return (["signal", "group"] + names + ["label"],
            wide_rows(rng, 600, k), wide_rows(rng, 1500, k), {
                "label": "label", "task": "binary", "metric": "auc",
                # The wide & deep model peaks about 0.05 under the tuned
                # logistic regression here (after 3-5 epochs) and falls
                # further by its tenth: the margin tells the two apart.
                "margin": 0.06, "roles": roles})


# --- error cases --------------------------------------------------------------


def gen_missing_label(rng, skip=False):
    train, evl = churn_rows(rng, 4000), churn_rows(rng, 1000)
    blank = [776, 1500, 3210]  # data rows; the file line is row + 2
    for i in blank:
        train[i][-1] = ""
    meta = {"label": "churned", "task": "binary", "metric": "auc",
            "margin": 0.03, "roles": CHURN_ROLES}
    if skip:
        meta["init_args"] = ["--on-error", "skip"]
        meta["gen_records_args"] = ["--on-error", "skip"]
    else:
        meta["expect"] = "error"
        meta["error"] = {"steps": ["init", "gen-records"],
                         "fragments": ["label"],
                         "place": f"train.csv:{blank[0] + 2}"}
    return CHURN_HEADER, train, evl, meta


def gen_duplicate_header(rng):
    train, evl = churn_rows(rng, 500), churn_rows(rng, 200)
    header = list(CHURN_HEADER)
    header[3] = "monthly_spend"  # support_tickets named like column 3
    col = len(",".join(header[:3])) + 2
    return header, train, evl, {
        "label": "churned", "task": "binary", "metric": "auc",
        "roles": {}, "expect": "error",
        "error": {"steps": ["init"], "fragments": ["duplicate",
                                                   "monthly_spend"],
                  "place": "train.csv:1", "col": col}}


def gen_mismatched_eval_header(rng):
    train, evl = churn_rows(rng, 500), churn_rows(rng, 200)
    eval_header = [("plan_type" if h == "plan" else h) for h in CHURN_HEADER]
    return CHURN_HEADER, train, evl, {
        "label": "churned", "task": "binary", "metric": "auc",
        "roles": {}, "expect": "error", "eval_header": eval_header,
        "error": {"steps": ["init"], "fragments": ["plan_type"],
                  "place": "eval.csv:1"}}


def gen_one_column_header(rng):
    train, evl = part_rows(rng, 500), part_rows(rng, 200)
    return ["laenge", "breite", "gewicht", "linie", "defekt"], train, evl, {
        "label": "defekt", "task": "binary", "metric": "auc",
        "delimiter": ";", "decimal": ",", "roles": {},
        "init_args": ["--delimiter", ","], "expect": "error",
        "error": {"steps": ["init"], "fragments": ["one column"],
                  "place": "train.csv:1"}}


CASES = {
    "id_columns": gen_id_columns,
    "free_text": gen_free_text,
    "dates": gen_dates,
    "nan_numbers": gen_nan_numbers,
    "nan_regression": gen_nan_regression,
    "integer_target": gen_integer_target,
    "currency_percent": gen_currency_percent,
    "decimal_comma": gen_decimal_comma,
    "booleans": gen_booleans,
    "tsv": gen_delimited("\t"),
    "pipe": gen_delimited("|"),
    "imbalanced": gen_imbalanced,
    "wide_overfit": gen_wide_overfit,
    "missing_label": gen_missing_label,
    "missing_label_skip": lambda rng: gen_missing_label(rng, skip=True),
    "duplicate_header": gen_duplicate_header,
    "mismatched_eval_header": gen_mismatched_eval_header,
    "one_column_header": gen_one_column_header,
}


def make_case(out_dir, name, seed=SEED):
    """Writes OUT_DIR/NAME and returns its metadata (with file paths)."""
    rng = random.Random(f"{seed}:{name}")
    header, train, evl, meta = CASES[name](rng)
    meta = dict(meta)
    meta.setdefault("expect", "trains")
    meta.setdefault("delimiter", ",")
    meta.setdefault("decimal", ".")
    ext = ".tsv" if meta["delimiter"] == "\t" else ".csv"
    case_dir = os.path.join(out_dir, name)
    os.makedirs(case_dir, exist_ok=True)
    meta["name"] = name
    meta["train"] = f"train{ext}"
    meta["eval"] = f"eval{ext}"
    meta["train_rows"] = len(train)
    meta["eval_rows"] = len(evl)
    write_csv(os.path.join(case_dir, meta["train"]), header, train,
              meta["delimiter"])
    write_csv(os.path.join(case_dir, meta["eval"]),
              meta.get("eval_header", header), evl, meta["delimiter"])
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    return meta


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--cases", default="",
                   help="comma-separated case names (default: all)")
    p.add_argument("--seed", type=int, default=SEED)
    a = p.parse_args(argv)
    names = [c for c in a.cases.split(",") if c] or list(CASES)
    for n in names:
        if n not in CASES:
            p.error(f"unknown case {n!r}; cases: {', '.join(CASES)}")
    for n in names:
        m = make_case(a.out_dir, n, a.seed)
        print(f"{n}: {m['train_rows']} + {m['eval_rows']} rows, "
              f"expect {m['expect']}")


if __name__ == "__main__":
    main(sys.argv[1:])
