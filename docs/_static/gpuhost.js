// Code lines that wrap (on a phone, and in the reference's docstring examples) continue
// under their own start, indented: each line of a code block becomes a block of its own
// with a hanging indent as deep as its leading spaces plus four columns (at most 16), so a
// wrapped line never looks like a new line of code. The text, newlines included, is
// unchanged (the copy button copies it as written); a block whose highlighting nests
// elements is left alone.
(function () {
  "use strict";

  function lineBlock(parts) {
    var line = document.createElement("span");
    line.className = "gh-line";
    parts.forEach(function (part) { line.appendChild(part); });
    // at most 16 columns, so that even a deeply indented line keeps room on a phone
    var indent = Math.min((line.textContent.match(/^ */) || [""])[0].length + 4, 16);
    line.style.paddingLeft = indent + "ch";
    line.style.textIndent = -indent + "ch";
    return line;
  }

  function splitLines(pre) {
    var nodes = Array.prototype.slice.call(pre.childNodes);
    if (nodes.some(function (n) { return n.nodeType === 1 && n.children.length; })) {
      return;
    }
    var lines = [[]];
    nodes.forEach(function (node) {
      var pieces = node.textContent.split("\n");
      pieces.forEach(function (piece, i) {
        var text = piece + (i < pieces.length - 1 ? "\n" : "");
        if (text) {
          var copy = node.nodeType === 1 ? node.cloneNode(false) : document.createTextNode("");
          copy.textContent = text;
          lines[lines.length - 1].push(copy);
        }
        if (i < pieces.length - 1) {
          lines.push([]);
        }
      });
    });
    pre.textContent = "";
    lines.forEach(function (parts) {
      if (parts.length) {
        pre.appendChild(lineBlock(parts));
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".bd-article div.highlight pre").forEach(splitLines);
  });
})();
