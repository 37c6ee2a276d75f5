// claude_sdkurl's JupyterLab extension: "Copy" and "Insert as a new cell" on the code blocks of
// the answers a %%claude cell shows, and the "stopped" line of a %%claude cell the kernel's restart
// cut short. Only outputs the kernel marked as an answer's text (output
// metadata "claude_sdkurl": {"answer": true}) get the buttons; nothing else of the page changes.
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';

const MARK = 'claude_sdkurl';
const BAR = 'claude-sdkurl-code-actions';
const INSERTED = 'claudeSdkurlInserted'; // on an answer's cell: the cell its last insert made
const SHELL = new Set(['bash', 'sh', 'shell', 'console', 'zsh']);

function isAnswer(output) {
  const meta = output && output.metadata ? output.metadata[MARK] : undefined;
  return !!(meta && meta.answer);
}

// The language a fenced block declared (JupyterLab keeps it as the code element's class).
function language(pre) {
  const code = pre.querySelector('code');
  const found = code && /(?:^|\s)language-([\w+-]+)/.exec(code.className || '');
  return found ? found[1].toLowerCase() : '';
}

// What a new cell gets: the block as it is, a shell block as a %%bash cell.
function cellSource(pre) {
  const text = (pre.querySelector('code') || pre).textContent.replace(/\n$/, '');
  return SHELL.has(language(pre)) ? `%%bash\n${text}` : text;
}

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (e) {
    // no clipboard permission (an insecure origin, a policy): the old way, a selected textarea
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand('copy');
    area.remove();
    return done;
  }
}

function button(label, title, onClick) {
  const b = document.createElement('button');
  b.className = 'jp-Button jp-mod-minimal jp-mod-small ' + BAR + '-button';
  b.textContent = label;
  b.title = title;
  b.addEventListener('click', event => {
    event.preventDefault();
    event.stopPropagation();
    onClick(b);
  });
  return b;
}

function decorate(panel, cell) {
  const area = cell.outputArea;
  if (!area || !area.model) {
    return;
  }
  for (let i = 0; i < area.model.length && i < area.widgets.length; i++) {
    if (!isAnswer(area.model.get(i))) {
      continue;
    }
    for (const pre of area.widgets[i].node.querySelectorAll('.jp-RenderedMarkdown pre')) {
      const next = pre.nextElementSibling;
      if (next && next.classList.contains(BAR)) {
        continue;
      }
      const bar = document.createElement('div');
      bar.className = BAR;
      bar.style.display = 'flex';
      bar.style.gap = '4px';
      bar.style.margin = '-4px 0 8px 0';
      bar.appendChild(button('Copy', 'Copy this code', async b => {
        b.textContent = (await copy(cellSource(pre).replace(/^%%bash\n/, ''))) ? 'Copied' : 'Copy failed';
        setTimeout(() => { b.textContent = 'Copy'; }, 2000);
      }));
      bar.appendChild(button('Insert as a new cell', 'Put this code in a new cell below this one', () => {
        const notebook = panel.content;
        const index = notebook.widgets.indexOf(cell);
        if (index < 0) {
          return;
        }
        // below the cells this answer inserted before, if they are still there: a second block
        // lands after the first, in the answer's order (it landed above it)
        const last = cell[INSERTED] ? notebook.widgets.indexOf(cell[INSERTED]) : -1;
        notebook.activeCellIndex = last > index ? last : index;
        NotebookActions.insertBelow(notebook);
        notebook.activeCell.model.sharedModel.setSource(cellSource(pre));
        cell[INSERTED] = notebook.activeCell;
        notebook.mode = 'edit';
      }));
      pre.insertAdjacentElement('afterend', bar);
    }
  }
}

function watch(panel, cell) {
  if (cell.model.type !== 'code' || cell[BAR]) {
    return;
  }
  cell[BAR] = true;
  let pending = false;
  const later = () => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        decorate(panel, cell);
      });
    }
  };
  // outputs arrive and are replaced in place as an answer streams: look again after each change
  new MutationObserver(later).observe(cell.node, { childList: true, subtree: true });
  later();
}

// A %%claude cell running when the kernel restarts: the kernel writes its "stopped" line as it
// stops, but JupyterLab has dropped the cell's pending request by then (its outputs are lost), so
// the line is written here, into the cell's outputs, where the saved notebook keeps it. (Shut
// Down keeps the kernel's own line: JupyterLab still listens while a kernel shuts down.)
const RESTARTED = '\u25a0 Stopped: the kernel restarted. A new kernel starts a new conversation; ' +
  '`%%claude --continue` goes on with this one.';

function isClaudeCell(cell) {
  return cell.model.type === 'code' && /^\s*%%?claude\b/.test(cell.model.sharedModel.getSource());
}

function noteRestart(panel) {
  for (const cell of panel.content.widgets) {
    if (!isClaudeCell(cell) || cell.model.executionState !== 'running') {
      continue;
    }
    const outputs = cell.model.outputs;
    for (let i = 0; i < outputs.length; i++) {
      const data = outputs.get(i).data || {};
      if (String(data['text/markdown'] || '').includes('Stopped: the kernel restarted')) {
        return; // the kernel's own line came through
      }
    }
    outputs.add({
      output_type: 'display_data',
      data: { 'text/markdown': RESTARTED, 'text/plain': RESTARTED },
      metadata: { [MARK]: { note: 'restart' } }
    });
  }
}

const plugin = {
  id: 'claude-sdkurl-notebook:code-actions',
  description: 'Copy and insert-as-a-new-cell on the code blocks of %%claude answers',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app, tracker) => {
    tracker.widgetAdded.connect((_, panel) => {
      const all = () => panel.content.widgets.forEach(cell => watch(panel, cell));
      panel.content.model ? all() : null;
      panel.content.modelContentChanged.connect(all);
      panel.context.ready.then(all);
      panel.sessionContext.statusChanged.connect((_, status) => {
        if (status === 'restarting' || status === 'autorestarting') {
          noteRestart(panel);
        }
      });
    });
  }
};

export default plugin;
