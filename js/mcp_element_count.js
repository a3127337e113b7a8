document.getElementsByTagName('*').length
