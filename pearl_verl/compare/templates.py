"""The web app's Jinja2 templates and stylesheet, kept as Python strings so every install carries them.

Every template is rendered with autoescaping on and none uses ``|safe``: problem, profile and
dialogue text is untrusted (tutor output can hold HTML or script) and must show as text. The pages
run no JavaScript at all; the Content-Security-Policy in :mod:`pearl_verl.compare.app` forbids it.
"""

from __future__ import annotations

BASE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% block title %}Tutor comparison{% endblock %}</title>
<link rel="stylesheet" href="/static/compare.css">
</head>
<body>
<header class="top">
  <h1>Tutor comparison</h1>
  {% if annotator %}
  <div class="who">
    <span>Signed in as <strong>{{ annotator.name }}</strong></span>
    {% if progress %}
    <span class="progress-text" data-done="{{ progress[0] }}" data-total="{{ progress[1] }}">
      {{ progress[0] }} of {{ progress[1] }} pairs done</span>
    <progress value="{{ progress[0] }}" max="{{ progress[1] }}"></progress>
    {% endif %}
    <form method="post" action="/logout" class="inline">
      <input type="hidden" name="csrf_token" value="{{ csrf }}">
      <button type="submit" class="link">Sign out</button>
    </form>
  </div>
  {% endif %}
</header>
<main>
{% block main %}{% endblock %}
</main>
</body>
</html>
"""

LOGIN = """{% extends "base.html" %}
{% block title %}Sign in · Tutor comparison{% endblock %}
{% block main %}
<section class="card narrow">
  <h2>Sign in</h2>
  {% if ended %}
  <p class="notice">Your session has ended: you signed out (perhaps in another browser) or your access link
    was replaced. A vote sent from it was not saved. Sign in again to go on.</p>
  {% endif %}
  <p>Paste the access code from your invitation link (or open the link itself).</p>
  <form method="post" action="/login">
    <label for="token">Access code</label>
    <input id="token" name="token" type="password" autocomplete="off" required value="{{ token }}">
    <input type="hidden" name="csrf_token" value="{{ csrf }}">
    <button type="submit" class="primary">Sign in</button>
  </form>
</section>
{% endblock %}
"""

COMPARE = """{% extends "base.html" %}
{% block main %}
<div class="study">
  <aside class="context">
    <section class="card">
      <h2>Problem</h2>
      <p class="text" id="problem">{{ problem.question }}</p>
      <details open>
        <summary>Reference solution</summary>
        <p class="text">{{ problem.reference_solution }}</p>
        <p>Final answer: <strong>{{ problem.answer }}</strong></p>
      </details>
    </section>
    <section class="card">
      <h2>Student</h2>
      <p>Ability level: <strong>{{ student.ability }}</strong> (traits sum to {{ student.total }} of 15)</p>
      <table class="traits">
        {% for trait, level in student.traits %}<tr><th>{{ trait }}</th><td>{{ level }}</td></tr>{% endfor %}
      </table>
      {% if student.misconception %}
      <h3>Starts with this misconception</h3>
      <p class="text">{{ student.misconception }}</p>
      {% endif %}
    </section>
  </aside>
  {% for side in sides %}
  <section class="dialogue card" data-side="{{ side.position }}" aria-label="Dialogue {{ side.letter }}">
    <h2>Dialogue {{ side.letter }}</h2>
    <ol class="turns">
      {% for turn in side.turns %}
      <li class="turn {{ turn.role }}"><span class="role">{{ turn.label }}</span><div class="turn-text">{{ turn.text }}</div></li>
      {% endfor %}
    </ol>
  </section>
  {% endfor %}
</div>
<form method="post" action="/vote" class="vote card">
  <div class="overall">
    <fieldset>
      <legend>Overall, which tutor teaches this student better?</legend>
      <label><input type="radio" name="choice" value="A" required> Dialogue A</label>
      <label><input type="radio" name="choice" value="tie"> Tie</label>
      <label><input type="radio" name="choice" value="B"> Dialogue B</label>
    </fieldset>
    <label class="comment">Comment (optional)
      <textarea name="comment" maxlength="{{ max_comment }}" rows="4"></textarea>
    </label>
    <input type="hidden" name="pair" value="{{ pair_public_id }}">
    <input type="hidden" name="csrf_token" value="{{ csrf }}">
    <button type="submit" class="primary">Submit and show the next pair</button>
  </div>
  <table class="dims">
    <caption>Per dimension (optional)</caption>
    <thead><tr><th>Dimension</th><th>A</th><th>Tie</th><th>B</th><th>No opinion</th></tr></thead>
    <tbody>
    {% for dim in dims %}
    <tr>
      <th title="{{ dim.definition }}">{{ dim.title }}</th>
      {% for value, label in dim_choices %}
      <td><input type="radio" name="dim_{{ dim.key }}" value="{{ value }}" aria-label="{{ dim.title }}: {{ label }}"
        {% if not value %}checked{% endif %}></td>
      {% endfor %}
    </tr>
    {% endfor %}
    </tbody>
  </table>
</form>
{% endblock %}
"""

DONE = """{% extends "base.html" %}
{% block title %}Done · Tutor comparison{% endblock %}
{% block main %}
<section class="card narrow" id="done">
  <h2>All pairs done</h2>
  <p>You have compared all {{ progress[1] }} pairs. Thank you! Your votes are saved; you can close this page.</p>
</section>
{% endblock %}
"""

MESSAGE = """{% extends "base.html" %}
{% block title %}{{ heading }} · Tutor comparison{% endblock %}
{% block main %}
<section class="card narrow" id="message">
  <h2>{{ heading }}</h2>
  <p>{{ message }}</p>
  <p><a href="{{ next_url }}">{{ next_label }}</a></p>
</section>
{% endblock %}
"""

TEMPLATES: dict[str, str] = {
    "base.html": BASE,
    "login.html": LOGIN,
    "compare.html": COMPARE,
    "done.html": DONE,
    "message.html": MESSAGE,
}

CSS = """
:root { --ink: #1d2430; --muted: #5b6575; --line: #d8dde6; --paper: #f5f7fa; --tutor: #eef4ff; --student: #fff;
        --accent: #2f5bd3; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); }
body { margin: 0; background: var(--paper); font-size: 15px; line-height: 1.45; }
.top { display: flex; justify-content: space-between; align-items: center; padding: 10px 20px; background: #fff;
       border-bottom: 1px solid var(--line); }
.top h1 { font-size: 18px; margin: 0; }
.who { display: flex; gap: 14px; align-items: center; color: var(--muted); }
.who progress { width: 160px; }
main { padding: 16px 20px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.card h2 { font-size: 16px; margin: 0 0 8px; }
.card h3 { font-size: 14px; margin: 12px 0 4px; }
.narrow { max-width: 520px; margin: 40px auto; }
.text, .turn-text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 8px; }
.study { display: grid; grid-template-columns: 330px 1fr 1fr; gap: 14px; align-items: start; }
.context { display: flex; flex-direction: column; gap: 14px; }
.traits th { text-align: left; font-weight: normal; color: var(--muted); padding-right: 16px; text-transform: capitalize; }
.dialogue .turns { list-style: none; padding: 0; margin: 0; }
.turn { border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px; margin-bottom: 8px; }
.turn.tutor { background: var(--tutor); margin-left: 24px; }
.turn.student { background: var(--student); margin-right: 24px; }
.role { display: block; font-size: 12px; font-weight: 600; color: var(--muted); text-transform: uppercase; }
.turn-text { margin: 0; }
.vote { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; margin-top: 14px; }
.vote fieldset { border: 0; padding: 0; margin: 0 0 10px; display: flex; gap: 18px; flex-wrap: wrap; }
.vote legend { font-weight: 600; margin-bottom: 6px; }
.comment { display: block; margin-bottom: 10px; }
.comment textarea { display: block; width: 100%; box-sizing: border-box; margin-top: 4px; font: inherit; }
.dims { border-collapse: collapse; width: 100%; }
.dims caption { text-align: left; font-weight: 600; margin-bottom: 4px; }
.dims th, .dims td { border-bottom: 1px solid var(--line); padding: 3px 6px; text-align: center; }
.dims tbody th { text-align: left; font-weight: normal; }
button.primary { background: var(--accent); color: #fff; border: 0; border-radius: 6px; padding: 8px 16px; font: inherit;
                 cursor: pointer; }
button.link { background: none; border: 0; color: var(--accent); cursor: pointer; font: inherit; padding: 0; }
form.inline { display: inline; }
.notice { border-left: 3px solid var(--accent); padding: 4px 10px; background: var(--tutor); }
input[type=password] { display: block; width: 100%; box-sizing: border-box; margin: 4px 0 12px; padding: 6px; font: inherit; }
"""
