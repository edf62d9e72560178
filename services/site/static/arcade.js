// The 404 arcade: steer the cart (a snake) to the products on a 20×20 grid; each product is 10 points,
// each step survived 1. Keyboard (arrows, WASD), swipes on the canvas and the on-screen pad. At game over
// the score can be posted (POST /api/arcade/scores, an event in the log) and the leaderboard
// (GET /api/arcade/leaderboard, read from ClickHouse) is reloaded until it shows it.

(() => {
  const N = 20;
  const canvas = document.getElementById('arcade');
  const ctx = canvas.getContext('2d');
  const cell = canvas.width / N;
  const scoreEl = document.getElementById('arcade-score');
  const startBtn = document.getElementById('arcade-start');
  const form = document.getElementById('arcade-submit');
  const board = document.getElementById('leaderboard');
  const DIRS = { up: [0, -1], down: [0, 1], left: [-1, 0], right: [1, 0] };
  const KEYS = {
    ArrowUp: 'up',
    ArrowDown: 'down',
    ArrowLeft: 'left',
    ArrowRight: 'right',
    w: 'up',
    s: 'down',
    a: 'left',
    d: 'right',
  };
  let state = null;
  let timer = null;

  function place() {
    for (;;) {
      const p = [Math.floor(Math.random() * N), Math.floor(Math.random() * N)];
      if (!state.snake.some(([x, y]) => x === p[0] && y === p[1])) return p;
    }
  }

  function start() {
    state = {
      snake: [
        [10, 10],
        [9, 10],
        [8, 10],
      ],
      dir: 'right',
      next: 'right',
      score: 0,
      over: false,
    };
    state.food = place();
    form.hidden = true;
    canvas.dataset.state = 'running';
    canvas.dataset.dir = state.dir;
    canvas.focus();
    clearInterval(timer);
    timer = setInterval(step, 110);
    draw();
  }

  function turn(d) {
    if (!state || state.over) return;
    const [dx, dy] = DIRS[d];
    const [cx, cy] = DIRS[state.dir];
    if (dx === -cx && dy === -cy) return;
    state.next = d;
  }

  function step() {
    state.dir = state.next;
    canvas.dataset.dir = state.dir;
    const [dx, dy] = DIRS[state.dir];
    const [hx, hy] = state.snake[0];
    const head = [hx + dx, hy + dy];
    const hit =
      head[0] < 0 ||
      head[1] < 0 ||
      head[0] >= N ||
      head[1] >= N ||
      state.snake.some(([x, y]) => x === head[0] && y === head[1]);
    if (hit) return gameOver();
    state.snake.unshift(head);
    if (head[0] === state.food[0] && head[1] === state.food[1]) {
      state.score += 10;
      state.food = place();
    } else {
      state.snake.pop();
    }
    state.score += 1;
    draw();
  }

  function gameOver() {
    clearInterval(timer);
    state.over = true;
    canvas.dataset.state = 'over';
    form.hidden = false;
    form.elements.score.value = String(state.score);
    draw();
  }

  function draw() {
    ctx.fillStyle = '#0e1726';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    if (!state) {
      ctx.fillStyle = '#9fb3c8';
      ctx.font = '20px system-ui';
      ctx.textAlign = 'center';
      ctx.fillText('Press Start, Enter or tap', canvas.width / 2, canvas.height / 2);
      return;
    }
    ctx.fillStyle = '#f2b84b';
    ctx.beginPath();
    ctx.arc((state.food[0] + 0.5) * cell, (state.food[1] + 0.5) * cell, cell * 0.4, 0, Math.PI * 2);
    ctx.fill();
    state.snake.forEach(([x, y], i) => {
      ctx.fillStyle = i === 0 ? '#4cc38a' : '#2f9e6e';
      ctx.fillRect(x * cell + 1, y * cell + 1, cell - 2, cell - 2);
    });
    scoreEl.textContent = `Score ${state.score}`;
    if (state.over) {
      ctx.fillStyle = 'rgba(0,0,0,.55)';
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      ctx.fillStyle = '#fff';
      ctx.font = '28px system-ui';
      ctx.textAlign = 'center';
      ctx.fillText(`Game over — ${state.score}`, canvas.width / 2, canvas.height / 2);
    }
  }

  document.addEventListener('keydown', (ev) => {
    const d = KEYS[ev.key];
    if (d && state && !state.over) {
      ev.preventDefault();
      turn(d);
    } else if ((ev.key === 'Enter' || ev.key === ' ') && (!state || state.over) && document.activeElement === canvas) {
      ev.preventDefault();
      start();
    }
  });
  for (const b of document.querySelectorAll('.pad [data-dir]')) {
    b.addEventListener('click', () => turn(b.dataset.dir));
  }
  let touch = null;
  canvas.addEventListener(
    'touchstart',
    (ev) => {
      const t = ev.changedTouches[0];
      touch = [t.clientX, t.clientY];
      if (!state || state.over) start();
      ev.preventDefault();
    },
    { passive: false },
  );
  canvas.addEventListener('touchend', (ev) => {
    if (!touch) return;
    const t = ev.changedTouches[0];
    const dx = t.clientX - touch[0];
    const dy = t.clientY - touch[1];
    if (Math.max(Math.abs(dx), Math.abs(dy)) > 20)
      turn(Math.abs(dx) > Math.abs(dy) ? (dx > 0 ? 'right' : 'left') : dy > 0 ? 'down' : 'up');
    touch = null;
  });
  startBtn.addEventListener('click', start);

  async function loadBoard() {
    const res = await fetch('/api/arcade/leaderboard');
    if (!res.ok) return [];
    const { entries } = await res.json();
    board.innerHTML = '';
    for (const e of entries) {
      const li = document.createElement('li');
      li.textContent = `${e.player} — ${e.best}`;
      li.dataset.player = e.player;
      li.dataset.best = String(e.best);
      board.appendChild(li);
    }
    return entries;
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const out = form.querySelector('[data-result]');
    const res = await fetch('/api/arcade/scores', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(new FormData(form)),
    });
    const body = await res.json().catch(() => ({}));
    out.className = res.ok ? 'ok' : 'error';
    out.textContent = res.ok ? body.message : body.error?.message || 'Not recorded.';
    if (!res.ok) return;
    const player = form.elements.player.value.trim();
    const score = Number(form.elements.score.value);
    // the score travels through the log into ClickHouse: poll until the leaderboard shows it
    for (let i = 0; i < 40; i++) {
      const entries = await loadBoard();
      if (entries.some((e) => e.player === player && e.best >= score)) return;
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  draw();
  loadBoard();
})();
